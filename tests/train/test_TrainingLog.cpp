// test_TrainingLog.cpp: CSV and JSON-lines logs (train/TrainingLog.h): header once, fields,
// empty/null for what was not measured, appending for a resumed run, every-N-steps records.
#include <doctest/doctest.h>

#include <fstream>
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
  CHECK_THROWS_WITH_AS(nn::TrainingLog("/nonexistent/dir/log.csv"),
                       doctest::Contains("nn.TrainingLog: cannot open /nonexistent/dir/log.csv"), tensor::Error);
  std::remove(path.c_str());
}
