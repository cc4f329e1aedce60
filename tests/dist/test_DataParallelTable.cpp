// dist::DataParallelTable on one GPU: exactly the network's own training (inputs on the CPU
// or on the GPU), a container of the network to printing and model files, and its errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>

#include "convert/ModelFile.h"
#include "cudnn/core/Config.h"
#include "distributed/DataParallelTable.h"
#include "tests/dist/Training.h"
#include "tests/support/ErrorText.h"

using dist::DataParallelTable;
using testing::has;

namespace {
const tensor::Device gpu = tensor::Device::cuda(0);
}

TEST_CASE("DataParallelTable: one GPU trains exactly as the network alone") {
  cudnn::ScopedConfig deterministic("deterministic=true");
  for (bool inputOnGpu : {false, true}) {
    CAPTURE(inputOnGpu);
    auto alone = testing::small_convnet(7, gpu);
    auto net = testing::small_convnet(7, gpu);
    auto dpt = std::make_shared<DataParallelTable>(net, std::vector<int>{0});
    const tensor::Device where = inputOnGpu ? gpu : tensor::Device::cpu();
    // The network alone gets its batch on the GPU either way.
    const double a = testing::train(*alone, gpu, 3, 12, 0, 12);
    const double b = testing::train(*dpt, where, 3, 12, 0, 12);
    CHECK(a == b);
    CHECK(testing::state_diff(*alone, *net) == 0);
    CHECK(dpt->output.device() == gpu);
    CHECK(dpt->gradInput.sizes() == tensor::Shape{12, 3, 8, 8});
  }
}

TEST_CASE("DataParallelTable: printing, state and model files see the network") {
  auto net = testing::small_convnet(8, gpu);
  auto dpt = std::make_shared<DataParallelTable>(net, std::vector<int>{0});
  CHECK(has(dpt->str(), "cudnn.DataParallelTable on GPUs [0] {\n  (1): " + net->type_name() + " {"));
  CHECK(dpt->stateDict().count("0.0.weight") == 1);
  CHECK(dpt->parameters().size() == net->parameters().size());
  const std::string path = (std::filesystem::temp_directory_path() / "dpt_model_test").string();
  nn::save_model(*dpt, path);
  nn::ModulePtr back = nn::load_model(path);
  CHECK(back->type_name() == "cudnn.DataParallelTable");
  back->evaluate();
  dpt->evaluate();
  auto [x, y] = testing::batch(0, 5);
  const tensor::Tensor a = dpt->forward(x.to(gpu)).cpu();
  const tensor::Tensor b = back->forward(x.to(gpu)).cpu();
  CHECK(tensor::max_abs_diff(a, b) == 0);
  std::remove((path + ".json").c_str());
  std::remove((path + ".safetensors").c_str());
}

TEST_CASE("DataParallelTable: empty batches, and bad GPU lists are named") {
  auto dpt = std::make_shared<DataParallelTable>(testing::small_convnet(9, gpu), std::vector<int>{0});
  const tensor::Tensor empty = tensor::zeros({0, 3, 8, 8});
  CHECK(dpt->forward(empty).sizes() == tensor::Shape{0, 10});
  CHECK(has(testing::error_of([] { DataParallelTable t(testing::small_convnet(1, gpu), {}); }),
            "expected distinct visible GPUs"));
  CHECK(has(testing::error_of([] { DataParallelTable t(testing::small_convnet(1, gpu), {0, 0}); }), "got [0, 0]"));
  CHECK(has(testing::error_of([] { DataParallelTable t(testing::small_convnet(1, gpu), {0, 99}); }), "got [0, 99]"));
  CHECK(has(testing::error_of([&] { dpt->to(tensor::Device::cpu()); }), "the replicas stay on their GPUs [0]"));
}
