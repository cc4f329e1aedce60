// test_CudnnModelFile.cpp: model files of cudnn networks (convert/ModelFile.h). A network
// converted to cudnn and trained a step on the GPU is saved from there; it loads back as
// twins on the CPU, computes on the GPU what the saved one computed, and converted to nn
// computes the same on the CPU. A float16 network keeps its dtypes (float32 batch-norm
// statistics) through the files.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "cudnn/core/Config.h"
#include "nn/Linear.h"
#include "nn/LogSoftMax.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/View.h"

using namespace tensor;
using nn::ModulePtr;

namespace {

namespace fs = std::filesystem;
const Device gpu = Device::cuda(0);

struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() / ("cudnn_nn_test_cudnn_model_file_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

// conv 3 -> 8 (pinned algorithms), batch norm, in-place ReLU, 2x2 max pooling, flatten,
// Linear(128 -> 10), LogSoftMax: [N x 3 x 8 x 8] -> [N x 10]
ModulePtr lenet() {
  auto conv = std::make_shared<nn::SpatialConvolution>(3, 8, 3, 3, 1, 1, 1, 1);
  conv->setMode("small", "deterministic", "deterministic");
  auto view = std::make_shared<nn::View>(-1);
  view->setNumInputDims(3);
  return std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
      conv, std::make_shared<nn::SpatialBatchNormalization>(8), std::make_shared<nn::ReLU>(true),
      std::make_shared<nn::SpatialMaxPooling>(2, 2), view, std::make_shared<nn::Linear>(8 * 4 * 4, 10),
      std::make_shared<nn::LogSoftMax>()});
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("a cudnn network saved from the GPU loads back into either backend") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  manual_seed(5);
  ModulePtr net = nn::convert(lenet(), cudnn::backend);
  Generator gen(6);
  // a training step's worth of state: moved running statistics, changed weights
  const Tensor x = uniform({4, 3, 8, 8}, -1, 1, gen, DType::Float32, gpu);
  net->forward(x);
  for (auto& p : net->parameters()) p.add_(uniform(p.sizes(), -0.1, 0.1, gen, DType::Float32, gpu));
  net->evaluate();
  const Tensor expected = net->forward(x).cpu();

  TempDir tmp;
  nn::save_model(*net, tmp / "lenet");
  const std::string text = read_file(tmp / "lenet.json");
  CHECK(text.find("\"type\": \"cudnn.SpatialConvolution\"") != std::string::npos);
  CHECK(text.find("\"bwdFilter\": \"deterministic\"") != std::string::npos);

  ModulePtr loaded = nn::load_model(tmp / "lenet");
  CHECK(loaded->str() == net->str());
  CHECK_FALSE(loaded->isTraining());
  for (const auto& [name, t] : loaded->stateDict()) {
    INFO(name);
    CHECK(t.is_cpu());  // loading never touches the GPU
  }
  auto conv = std::dynamic_pointer_cast<nn::SpatialConvolution>((*loaded->children())[0]);
  REQUIRE(conv);
  CHECK(conv->type_name() == "cudnn.SpatialConvolution");
  CHECK(conv->algo == std::dynamic_pointer_cast<nn::SpatialConvolution>((*net->children())[0])->algo);

  loaded->to(gpu);
  const Tensor y = loaded->forward(x);
  CHECK(y.is_cuda());
  CHECK(max_abs_diff(y.cpu(), expected) < 1e-5);

  ModulePtr onCpu = nn::convert(nn::load_model(tmp / "lenet"), nn::backend);
  onCpu->apply([](nn::Module& m) { CHECK(m.backendKind() == nn::Backend::nn); });
  CHECK(max_abs_diff(onCpu->forward(x.cpu()), expected) < 1e-4);
}

TEST_CASE("a float16 cudnn network keeps its dtypes through the files") {
  manual_seed(7);
  // no pooling: a module without a twin would compute on the CPU, where float16 is refused
  auto view = std::make_shared<nn::View>(-1);
  view->setNumInputDims(3);
  ModulePtr net =
      nn::convert(std::make_shared<nn::Sequential>(std::initializer_list<ModulePtr>{
                      std::make_shared<nn::SpatialConvolution>(3, 8, 3, 3, 1, 1, 1, 1),
                      std::make_shared<nn::SpatialBatchNormalization>(8), std::make_shared<nn::ReLU>(true), view,
                      std::make_shared<nn::Linear>(8 * 8 * 8, 10), std::make_shared<nn::LogSoftMax>()}),
                  cudnn::backend);
  net->to(DType::Float16);
  net->evaluate();
  Generator gen(8);
  const Tensor x = uniform({2, 3, 8, 8}, -1, 1, gen, DType::Float16, gpu);
  const Tensor expected = net->forward(x).cpu();

  TempDir tmp;
  nn::save_model(*net, tmp / "half");
  ModulePtr loaded = nn::load_model(tmp / "half");
  const auto saved = net->stateDict();
  for (const auto& [name, t] : loaded->stateDict()) {
    INFO(name);
    CHECK(t.dtype() == saved.at(name).dtype());
  }
  CHECK(loaded->stateDict().at("1.running_var").dtype() == DType::Float32);
  CHECK(loaded->stateDict().at("0.weight").dtype() == DType::Float16);
  CHECK(loaded->stateDict().at("4.bias").dtype() == DType::Float16);
  loaded->to(gpu);
  CHECK(max_abs_diff(loaded->forward(x).cpu(), expected) < 5e-3);
}
