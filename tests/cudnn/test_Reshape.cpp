// test_Reshape.cpp: cudnn.Reshape against nn.Reshape in every dtype (single samples, batches,
// batchMode forced either way, non-contiguous inputs copied on the device), storage sharing,
// a convert round trip and the errors.
#include <doctest/doctest.h>

#include <optional>

#include "cudnn/Reshape.h"
#include "nn/Reshape.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);

struct Case {
  Shape size;
  std::optional<bool> batchMode;
  Shape input;
};
const Case kCases[] = {
    {{6}, std::nullopt, {2, 3}},        // exactly one sample
    {{6}, std::nullopt, {1, 2, 3}},     // first size 1: a batch of one
    {{6}, std::nullopt, {4, 2, 3}},     // a batch
    {{2, 3}, std::nullopt, {5, 6}},     // a batch, two sizes
    {{3}, true, {1, 3}},                // forced batch
    {{6}, false, {3, 2}},               // forced single sample
};
}  // namespace

TEST_CASE("cudnn.Reshape matches nn.Reshape (single, batch, batchMode) in every dtype") {
  Generator gen(3401);
  INFO("seed 3401");
  for (const Case& c : kCases) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (bool nc : {false, true}) {
        INFO("Reshape", shape_str(c.size), " batchMode ", c.batchMode ? (*c.batchMode ? "true" : "false") : "unset",
             " on ", shape_str(c.input));
        nn::Reshape ref(c.size, c.batchMode);
        cudnn::Reshape twin(c.size, c.batchMode);
        expect_twin_matches(ref, twin, uniform(c.input, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            nc);
        CHECK(twin.output.sizes() == ref.output.sizes());
      }
    }
  }
}

TEST_CASE("cudnn.Reshape shares storage where the strides allow and copies on the device otherwise") {
  cudnn::Reshape twin(2, 2);
  twin.to(gpu);
  const Tensor x = arange(8, DType::Float64, gpu).view({2, 4});
  const Tensor y = twin.forward(x);
  CHECK(y.sizes() == Shape{2, 2, 2});
  CHECK(y.shares_storage(x));
  const Tensor g = arange(8, DType::Float64, gpu).view({2, 2, 2});
  CHECK(twin.backward(x, g).shares_storage(g));
  const Tensor xt = arange(8, DType::Float64, gpu).view({4, 2}).t();
  CHECK(twin.forward(xt).to_vector<double>() == std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7});
}

TEST_CASE("cudnn.Reshape convert round trip, printing and errors") {
  Generator gen(3402);
  expect_convert_roundtrip(std::make_shared<nn::Reshape>(2, 3), uniform({4, 6}, -1, 1, gen));
  cudnn::Reshape twin(2, 3);
  CHECK(twin.str() == "cudnn.Reshape(2x3)");
  CHECK_THROWS_WITH_AS(twin.forward(zeros({4, 6})),
                       doctest::Contains("cudnn.Reshape::updateOutput: expected input on a CUDA device"), Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({4, 5}, DType::Float32, gpu)),
                       "cudnn.Reshape::updateOutput: expected an input of [batch x ...] with 6 elements per sample to "
                       "reshape to [batch x 2 x 3], got [4 x 5]",
                       Error);
}
