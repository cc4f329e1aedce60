// test_Identity.cpp: cudnn.Identity against nn.Identity in every dtype, sharing (no copy) of
// input and gradOutput, a convert round trip and the errors.
#include <doctest/doctest.h>

#include "cudnn/Identity.h"
#include "nn/Identity.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}

TEST_CASE("cudnn.Identity matches nn.Identity in every dtype, batch and single, contiguous or not") {
  Generator gen(3201);
  INFO("seed 3201");
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (const Shape& s : {Shape{4, 5}, Shape{7}, Shape{2, 3, 4, 5}}) {
      for (bool nc : {false, true}) {
        nn::Identity ref;
        cudnn::Identity twin;
        expect_twin_matches(ref, twin, uniform(s, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt), nc);
      }
    }
  }
}

TEST_CASE("cudnn.Identity hands back its input and gradOutput themselves") {
  Generator gen(3202);
  cudnn::Identity twin;
  twin.to(gpu);
  const Tensor x = uniform({3, 4}, -1, 1, gen, DType::Float32, gpu);
  const Tensor g = uniform({3, 4}, -1, 1, gen, DType::Float32, gpu);
  CHECK(twin.forward(x).is_same_view(x));
  CHECK(twin.backward(x, g).is_same_view(g));
  const Tensor xt = x.t();  // non-contiguous: still no copy
  CHECK(twin.forward(xt).is_same_view(xt));
}

TEST_CASE("cudnn.Identity convert round trip, printing and errors") {
  Generator gen(3203);
  expect_convert_roundtrip(std::make_shared<nn::Identity>(), uniform({2, 3}, -1, 1, gen));
  cudnn::Identity twin;
  CHECK(twin.str() == "cudnn.Identity");
  CHECK(twin.type_name() == "cudnn.Identity");
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 3})),
                       "cudnn.Identity::updateOutput: expected input on a CUDA device, got float32 [2 x 3] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  const Tensor x = zeros({2, 3}, DType::Float32, gpu);
  twin.forward(x);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({2, 3})),
                       "cudnn.Identity::backward: expected gradOutput on cuda:0 (the input's device), got float32 "
                       "[2 x 3] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(twin.updateGradInput(x, zeros({2, 3})),
                       doctest::Contains("cudnn.Identity::updateGradInput: expected gradOutput on cuda:0"), Error);
}
