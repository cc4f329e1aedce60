// test_UntrustedModel.cpp: model files as untrusted input (Note [Untrusted model files] in
// convert/ModelFile.cpp) and saving under injected faults (Note [Saving a pair]). The hostile
// files are committed under tests/data/convert/ (scripts/make_fuzz_seeds.py; they seed the
// fuzz target too): each must be refused with an error that says why, quickly and without
// allocating what the file describes. A failed save leaves the previous pair loadable.
#include <doctest/doctest.h>

#include "tests/support/ErrorText.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "convert/ModelFile.h"
#include "nn/ELU.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "nn/SpatialConvolution.h"
#include "tensor/FileIO.h"

using namespace tensor;
using testing::error_of;
using testing::has;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(CUDNN_NN_TEST_DATA) + "/convert/";

// The error of loading tests/data/convert/<name>, and the seconds it took.
std::pair<std::string, double> load_error(const std::string& name) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { nn::load_model(kData + name); });
  return {e, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("cudnn-nn-untrusted-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::set<std::string> files() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.insert(e.path().filename().string());
    return out;
  }
};

std::shared_ptr<nn::Sequential> small_net(float value) {
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(64, 64));
  net->add(std::make_shared<nn::ReLU>());
  for (auto& p : net->parameters()) p.fill_(value);
  return net;
}

float first_weight(const nn::ModulePtr& net) { return net->parameters().at(0).to_vector<float>().at(0); }

}  // namespace

TEST_CASE("hostile model files are refused before anything large is allocated (tests/data/convert)") {
  // nn.Linear of 2^31 x 2^31 used to write past a 64-byte buffer
  auto [linear, t1] = load_error("linear_overflow");
  CHECK(has(linear, "(nn.Linear)"));
  CHECK(has(linear, "[2147483648 x 2147483648] for float32: its size in bytes overflows int64"));
  // a 1 GiB kernel, then a misspelt key: the key is found before anything is built
  auto [misspelt, t2] = load_error("big_kernel_misspelt_key");
  CHECK(has(misspelt, "at 1 (nn.ReLU): nn.ReLU config: unknown key 'inplcae'"));
  CHECK(t2 < 0.5);
  // the same kernel without the typo: refused for what the 4-byte weights file cannot fill
  auto [big, t3] = load_error("big_kernel");
  CHECK(has(big, "at 0 (nn.SpatialConvolution): tensor::Storage: allocating 1073741824 bytes"));
  CHECK(has(big, "needs more memory than the 1 elements of"));
  CHECK(t3 < 0.5);
  auto [conv_key, t4] = load_error("conv_misspelt_key");
  CHECK(has(conv_key, "nn.SpatialConvolution config: unknown key 'padw'"));
  // weights of the right shape but an integer dtype
  CHECK(has(load_error("int_weights").first, "'bias' is int64, expected a floating dtype"));
  // a geometry whose output size overflows loads (its weights are 3 numbers) and then
  // refuses to compute instead of wrapping
  const nn::ModulePtr conv = nn::load_model(kData + "conv_huge_stride");
  CHECK(has(error_of([&] { conv->forward(zeros({1, 1, 4, 4})); }), "overflows int64"));
  const nn::ModulePtr ok = nn::load_model(kData + "valid");
  CHECK(ok->forward(from_vector<float>({1, 1})).to_vector<float>() == std::vector<float>{3.5f, 6});
}

TEST_CASE("a network larger than its weights file is refused even when every key is right") {
  TempDir dir;
  const std::string stem = dir / "m";
  auto net = small_net(0.5f);
  nn::save_model(*net, stem);
  // swap in a structure with a much bigger layer beside the small weights
  const std::string json = R"({"format": "cudnn-nn model", "version": 1, "module": {"type": "nn.Sequential",
    "children": [{"type": "nn.Linear", "config": {"inputSize": 20000, "outputSize": 20000}}, {"type": "nn.ReLU"}]}})";
  write_file_atomic(stem + ".json", json.data(), json.size(), "test");
  CHECK(has(error_of([&] { nn::load_model(stem); }), "at 0 (nn.Linear): tensor::Storage: allocating 1600000000 bytes"));
  // the fitting structure loads; a shape that fits the budget but not the file is listed
  const std::string wrong = R"({"format": "cudnn-nn model", "version": 1, "module": {"type": "nn.Sequential",
    "children": [{"type": "nn.Linear", "config": {"inputSize": 32, "outputSize": 64}}, {"type": "nn.ReLU"}]}})";
  write_file_atomic(stem + ".json", wrong.data(), wrong.size(), "test");
  CHECK(has(error_of([&] { nn::load_model(stem); }), "'0.weight' has shape [64 x 64], expected [64 x 32]"));
}

TEST_CASE("build_model (structure alone) allocates at most its bound, naming the document") {
  // no weights file bounds a structure: a 300-byte document asked for 2^40 elements (issue 23)
  const std::string huge = R"({"format": "cudnn-nn model", "version": 1, "module": {"type": "nn.Sequential",
    "children": [{"type": "nn.Linear", "config": {"inputSize": 1048576, "outputSize": 1048576}}]}})";
  const std::string e = error_of([&] { nn::build_model(tensor::Json::parse(huge), "huge.json"); });
  CHECK(has(e, "huge.json: the network it describes needs more than build_model's maxBytes (4294967296 bytes)"));
  // a bound of one's own: a 64 x 32 Linear (2 x 8 KB with its gradient, and the bias) fits 64 KB, not 8 KB
  const std::string small = R"({"format": "cudnn-nn model", "version": 1, "module": {"type": "nn.Sequential",
    "children": [{"type": "nn.Linear", "config": {"inputSize": 32, "outputSize": 64}}]}})";
  CHECK(nn::build_model(tensor::Json::parse(small), "small.json", 65536)->parameters().size() == 2);
  CHECK(has(error_of([&] { nn::build_model(tensor::Json::parse(small), "small.json", 8192); }),
            "small.json: the network it describes needs more than build_model's maxBytes (8192 bytes)"));
}

TEST_CASE("a directory instead of a file is named as one") {
  TempDir dir;
  fs::create_directories(dir / "m.json");
  fs::create_directories(dir / "w.safetensors");
  CHECK(has(error_of([&] { nn::load_model(dir / "m"); }), "nn::load_model: '" + (dir / "m.json") + "' is a directory"));
  nn::Linear lin(2, 2);
  CHECK(has(
      error_of([&] { nn::load_weights(lin, dir / "w.safetensors"); }),
      "nn::load_weights: tensor::load_safetensors: '" + (dir / "w.safetensors") + "' is a directory, expected a file"));
}

TEST_CASE("save_model under a file-size limit: an error, and the previous pair still loads") {
  TempDir dir;
  const std::string stem = dir / "m";
  nn::save_model(*small_net(1.0f), stem);
  const auto before = dir.files();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4096, 4096};  // the JSON fits, the 16 KB of weights do not
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      nn::save_model(*small_net(2.0f), stem);
    } catch (const Error&) {
      ::_exit(0);
    }
    ::_exit(1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(first_weight(nn::load_model(stem)) == 1.0f);
  CHECK(dir.files() == before);  // no temporary file left behind
}

TEST_CASE("save_model into a path whose parent is a file, or with a non-finite config: nothing written") {
  TempDir dir;
  const std::string stem = dir / "m";
  nn::save_model(*small_net(1.0f), stem);
  CHECK(has(error_of([&] { nn::save_model(*small_net(2.0f), stem + ".json/x"); }), "cannot create a temporary file"));
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::ELU>());
  std::static_pointer_cast<nn::ELU>(net->modules[0])->alpha = std::nan("");  // a public field, set afterwards
  CHECK(has(error_of([&] { nn::save_model(*net, stem); }),
            "nn::save_model: nn.ELU config at 0.alpha is nan: model files hold finite numbers only"));
  CHECK(first_weight(nn::load_model(stem)) == 1.0f);
  CHECK(dir.files() == std::set<std::string>{"m.json", "m.safetensors"});
}

TEST_CASE("save_model killed at any point leaves a pair that loads") {
  TempDir dir;
  const std::string stem = dir / "m";
  nn::save_model(*small_net(0.0f), stem);
  for (int round = 0; round < 4; ++round) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (int i = 1;; ++i) nn::save_model(*small_net(static_cast<float>(i)), stem);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30 + 20 * round));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const nn::ModulePtr net = nn::load_model(stem);  // the structure never changes, so any pair loads
    const auto w = net->parameters().at(0).to_vector<float>();
    CHECK(w.front() == w.back());
  }
}
