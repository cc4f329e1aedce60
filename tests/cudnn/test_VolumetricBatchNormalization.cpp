// test_VolumetricBatchNormalization.cpp: cudnn.VolumetricBatchNormalization against nn.VolumetricBatchNormalization
// (tests/support/BatchNormTwinChecks.h): training and evaluation (forward, running statistics, both backward passes), affine
// on and off, several eps and momentum values, batch 1, single samples in evaluation, float32 with TF32 off, float64,
// float16 and bfloat16 data with float32 parameters, a non-contiguous input, updateGradInput/accGradParameters
// separately, convert round trip, errors.
#include <doctest/doctest.h>

#include "cudnn/Config.h"
#include "cudnn/VolumetricBatchNormalization.h"
#include "nn/VolumetricBatchNormalization.h"
#include "tests/support/BatchNormTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {
using Nn = nn::VolumetricBatchNormalization;
using Cu = cudnn::VolumetricBatchNormalization;
// [N x C x T x H x W]: batch 1, odd sizes; single samples [C x T x H x W]
const std::vector<Shape> batched = {{2, 3, 3, 4, 5}, {1, 3, 2, 3, 4}, {3, 2, 1, 2, 1}};
// 16-bit data: at least 6 values per channel (with fewer, the training gradient's
// cancellation amplifies the inputs' rounding beyond the 16-bit tolerances)
const std::vector<Shape> batched16 = {{2, 3, 3, 4, 5}, {1, 3, 2, 3, 4}, {3, 2, 1, 2, 1}};
const std::vector<Shape> single = {{3, 2, 3, 4}, {2, 1, 1, 1}};
}  // namespace

TEST_CASE(
    "cudnn.VolumetricBatchNormalization training matches nn.VolumetricBatchNormalization in float32 (TF32 off) and "
    "float64") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  expect_batch_norm_twin_matches<Nn, Cu>(batched, true, true, DType::Float32);
  expect_batch_norm_twin_matches<Nn, Cu>(batched, true, true, DType::Float64);
}

TEST_CASE(
    "cudnn.VolumetricBatchNormalization evaluation matches nn.VolumetricBatchNormalization (fixed-statistics "
    "backward), batched and single samples") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (DType dt : {DType::Float32, DType::Float64}) {
    expect_batch_norm_twin_matches<Nn, Cu>(batched, true, false, dt);
    expect_batch_norm_twin_matches<Nn, Cu>(single, false, false, dt);
  }
}

TEST_CASE(
    "cudnn.VolumetricBatchNormalization float16 and bfloat16 data with float32 parameters, training and evaluation") {
  expect_batch_norm_parameter_dtypes<Cu>(3);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    expect_batch_norm_twin_matches<Nn, Cu>(batched16, true, true, dt);
    expect_batch_norm_twin_matches<Nn, Cu>(batched16, true, false, dt);
    expect_batch_norm_twin_matches<Nn, Cu>(single, false, false, dt);
  }
}

TEST_CASE("cudnn.VolumetricBatchNormalization with a non-contiguous input, training and evaluation") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  expect_batch_norm_twin_matches<Nn, Cu>(batched, true, true, DType::Float32, true);
  expect_batch_norm_twin_matches<Nn, Cu>(batched, true, false, DType::Float32, true);
}

TEST_CASE(
    "cudnn.VolumetricBatchNormalization running statistics over several steps (momentum 0.2, unbiased variance)") {
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (const Shape& s : batched16) expect_batch_norm_running_statistics<Nn, Cu>(s, dt);
  }
}

TEST_CASE(
    "cudnn.VolumetricBatchNormalization updateGradInput and accGradParameters separately, training and evaluation") {
  for (const Shape& s : batched) {
    expect_batch_norm_separate_gradients<Nn, Cu>(s, true);
    expect_batch_norm_separate_gradients<Nn, Cu>(s, false);
  }
}

TEST_CASE("cudnn.VolumetricBatchNormalization convert round trip, printing and errors") {
  expect_batch_norm_convert_roundtrip<Nn>(batched[0]);
  CHECK(Cu(8).str() == "cudnn.VolumetricBatchNormalization (5D) (8)");
  expect_batch_norm_errors<Cu>({2, 4, 2, 2, 3});
  const Device gpu = Device::cuda(0);
  Cu m(4);
  m.to(gpu);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 2, 2, 2}, DType::Float32, gpu)),
                       "cudnn.VolumetricBatchNormalization::updateOutput: expected input of [N x C x T x H x W] with "
                       "C = 4, got [2 x 3 x 2 x 2 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4, 3, 3}, DType::Float32, gpu)),
                       "cudnn.VolumetricBatchNormalization::updateOutput: expected input of [N x C x T x H x W] (or "
                       "[C x T x H x W] in evaluation), got [2 x 4 x 3 x 3] in training",
                       Error);
  m.evaluate();
  CHECK(m.forward(ones({4, 2, 3, 2}, DType::Float32, gpu)).sizes() == Shape{4, 2, 3, 2});
}

TEST_CASE("cudnn.VolumetricBatchNormalization steady state: no device allocation after a warm-up") {
  const Device gpu = Device::cuda(0);
  Generator gen(47);
  for (bool training : {true, false}) {
    for (DType dt : {DType::Float32, DType::Float16}) {
      INFO(std::string(training ? "training " : "evaluation "), std::string(name(dt)));
      const Shape& s = batched[0];
      Cu m(s[1]);
      m.to(gpu);
      m.to(dt);
      if (!training) m.evaluate();
      expect_no_steady_state_allocations(m, batch_norm_input(s, true, gen).to(gpu, dt));
    }
  }
}

TEST_CASE(
    "cudnn.VolumetricBatchNormalization: NaN and +-Inf inputs give nn's values, training and evaluation (Note [NaN and "
    "Inf])") {
  expect_batch_norm_nonfinite<Nn, Cu>(batched);
}
