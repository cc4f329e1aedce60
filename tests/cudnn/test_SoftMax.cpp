// test_SoftMax.cpp: cudnn.SoftMax against nn.SoftMax (tests/support/SoftMaxTwinChecks.h): float32 with TF32 off,
// float64, float16, bfloat16, the ranks nn.SoftMax accepts (batch and not, batch 1, odd sizes),
// a non-contiguous input, fast mode, large inputs, convert round trip, errors.
#include <doctest/doctest.h>

#include "cudnn/Config.h"
#include "cudnn/SoftMax.h"
#include "nn/SoftMax.h"
#include "tests/support/SoftMaxTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {
using Nn = nn::SoftMax;
using Cu = cudnn::SoftMax;
// [n], [batch x n], [C x H x W], [N x C x H x W]; batch 1 and odd sizes
const std::vector<Shape> shapes = {{7}, {4, 9}, {1, 13}, {5, 3, 4}, {2, 5, 3, 4}, {1, 3, 1, 1}, {3, 1, 2, 5}};
}  // namespace

TEST_CASE("cudnn.SoftMax matches nn.SoftMax in float32 (TF32 off) and float64") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  expect_softmax_twin_matches<Nn, Cu>(shapes, DType::Float32);
  expect_softmax_twin_matches<Nn, Cu>(shapes, DType::Float64);
}

TEST_CASE("cudnn.SoftMax matches nn.SoftMax in float16 and bfloat16") {
  expect_softmax_twin_matches<Nn, Cu>(shapes, DType::Float16, false, 2);
  expect_softmax_twin_matches<Nn, Cu>(shapes, DType::BFloat16, false, 2);
}

TEST_CASE("cudnn.SoftMax matches nn.SoftMax with a non-contiguous input") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  expect_softmax_twin_matches<Nn, Cu>(shapes, DType::Float32, true);
}

TEST_CASE("cudnn.SoftMax in fast mode (CUDNN_SOFTMAX_FAST) matches nn.SoftMax on moderate inputs") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  expect_softmax_twin_matches<Nn, Cu>(shapes, DType::Float32, false, 3, true);
  expect_softmax_twin_matches<Nn, Cu>(shapes, DType::Float64, false, 3, true);
}

TEST_CASE("cudnn.SoftMax (accurate) stays finite and matches nn.SoftMax for large inputs") {
  expect_softmax_large_inputs<Nn, Cu>(shapes);
}

TEST_CASE("cudnn.SoftMax convert round trip, printing and errors") {
  expect_softmax_convert_and_errors<Nn, Cu>(
      {2, 5}, {2, 3, 4, 5, 6},
      "expected input of [n], [batch x n], [C x H x W] or [N x C x H x W], got [2 x 3 x 4 x 5 x 6]");
}

TEST_CASE("cudnn.SoftMax steady state: no device allocation after a warm-up") {
  const Device gpu = Device::cuda(0);
  Generator gen(47);
  Cu m;
  m.to(gpu);
  expect_no_steady_state_allocations(m, uniform(shapes.back(), -2, 2, gen).to(gpu));
}

TEST_CASE("cudnn.SoftMax: NaN and +-Inf inputs give nn's values (Note [NaN and Inf])") {
  expect_softmax_nonfinite<Nn, Cu>(shapes);
}
