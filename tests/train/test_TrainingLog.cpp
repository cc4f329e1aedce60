// test_TrainingLog.cpp: CSV and JSON-lines logs (train/TrainingLog.h): header once, fields,
// empty/null for what was not measured, appending for a resumed run, every-N-steps records;
// the kind escaped (JSON, RFC 4180), the parent directory created, errors naming the path.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tensor/Json.h"
#include "tensor/Tensor.h"
#include "train/TrainingLog.h"

namespace {
std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}
}  // namespace

TEST_CASE("TrainingLog writes CSV with one header, appends on resume, and every N steps") {
  const std::string path = "/tmp/cudnn_nn_test_log.csv";
  {
    nn::TrainingLog log(path);
    log.write({.epoch = 1, .step = 10, .loss = 0.5, .accuracy = 0.75, .lr = 1e-3, .imagesPerSecond = 100});
    for (int64_t s = 1; s <= 5; ++s) log.maybeWriteStep({.kind = "step", .epoch = 1, .step = s, .loss = 1.0}, 2);
  }
  {
    nn::TrainingLog log(path, true);
    log.write({.epoch = 2, .step = 20, .loss = 0.25});
  }
  const auto l = lines(path);
  REQUIRE(l.size() == 5);
  CHECK(l[0] == "kind,epoch,step,loss,accuracy,lr,loss_scale,images_per_s,elapsed_s");
  CHECK(l[1].starts_with("epoch,1,10,0.5,0.75,0.001,,100,"));
  CHECK(l[2].starts_with("step,1,2,1,,,,,"));
  CHECK(l[3].starts_with("step,1,4,"));
  CHECK(l[4].starts_with("epoch,2,20,0.25,"));
  std::remove(path.c_str());
}

TEST_CASE("TrainingLog writes JSON lines") {
  const std::string path = "/tmp/cudnn_nn_test_log.jsonl";
  {
    nn::TrainingLog log(path);
    CHECK(log.json());
    log.write({.epoch = 3, .step = 7, .loss = 0.125, .lossScale = 65536});
  }
  const auto l = lines(path);
  REQUIRE(l.size() == 1);
  const tensor::Json j = tensor::Json::parse(l[0]);
  CHECK(j.at("kind").as_string() == "epoch");
  CHECK(j.at("epoch").as_int() == 3);
  CHECK(j.at("loss").as_number() == 0.125);
  CHECK(j.at("loss_scale").as_number() == 65536);
  CHECK(j.at("accuracy").is_null());
  CHECK(j.at("elapsed_s").as_number() >= 0);
  std::remove(path.c_str());
}

TEST_CASE("TrainingLog escapes the kind: a JSON string, an RFC 4180 CSV field") {
  const std::string kinds[] = {"a \"quoted\" kind", "two\nlines", "comma, separated", "back\\slash\ttab\r", "plain"};
  const std::string json = "/tmp/cudnn_nn_test_log_escape.jsonl", csv = "/tmp/cudnn_nn_test_log_escape.csv";
  {
    nn::TrainingLog j(json), c(csv);
    for (const std::string& k : kinds) {
      j.write({.kind = k, .epoch = 1, .loss = 0.5});
      c.write({.kind = k, .epoch = 1, .loss = 0.5});
    }
    CHECK_THROWS_WITH_AS(j.write({.kind = "\xff\xfe"}),
                         doctest::Contains("nn.TrainingLog::write: expected a UTF-8 kind"), tensor::Error);
  }
  const auto l = lines(json);
  REQUIRE(l.size() == std::size(kinds));  // one line per record, nothing of the refused one
  for (size_t i = 0; i < l.size(); ++i) {
    const tensor::Json r = tensor::Json::parse(l[i]);
    CHECK(r.at("kind").as_string() == kinds[i]);
    CHECK(r.at("loss").as_number() == 0.5);
  }
  std::ifstream in(csv);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"a \"\"quoted\"\" kind\",1,0,0.5,") != std::string::npos);
  CHECK(text.find("\"two\nlines\",1,0,0.5,") != std::string::npos);
  CHECK(text.find("\"comma, separated\",1,0,0.5,") != std::string::npos);
  CHECK(text.find("\"back\\slash\ttab\r\",1,") != std::string::npos);
  CHECK(text.find("\nplain,1,0,0.5,") != std::string::npos);
  std::remove(json.c_str());
  std::remove(csv.c_str());
}

TEST_CASE("TrainingLog: the parent directory created, a directory or an impossible parent an error naming the path") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("cudnn_nn_test_log_dirs." + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string nested = (root / "runs" / "deeper" / "fm.csv").string();
  {
    nn::TrainingLog log(nested);
    log.write({.epoch = 1});
  }
  CHECK(lines(nested).size() == 2);
  const std::string dir = (root / "runs").string();
  for (bool append : {false, true}) {
    INFO("append ", append);
    CHECK_THROWS_WITH_AS(
        nn::TrainingLog(dir, append),
        doctest::Contains(("nn.TrainingLog: cannot open " + dir + " for writing: it is a directory").c_str()),
        tensor::Error);
  }
  // a parent that is a file
  const std::string under_file = nested + "/log.csv";
  CHECK_THROWS_WITH_AS(
      nn::TrainingLog(under_file, true),
      doctest::Contains(("nn.TrainingLog: cannot open " + under_file + " for writing: cannot create").c_str()),
      tensor::Error);
  fs::remove_all(root);
}
