// test_Dropout.cpp: cudnn.Dropout against nn.Dropout in every dtype (v2 and v1, training and
// evaluation, in place, p = 0), the same mask from the same seed on either device (tensor
// randomness is counter-based), in-place storage sharing, a convert round trip and errors.
#include <doctest/doctest.h>

#include "cudnn/Dropout.h"
#include "nn/Dropout.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);

struct Case {
  double p;
  bool v1, inplace, training;
};
const Case kCases[] = {
    {0.5, false, false, true},  {0.2, false, false, true}, {0.3, true, false, true},  {0.3, true, false, false},
    {0.4, false, true, true},   {0.5, false, false, false}, {0.0, false, false, true},
};
}  // namespace

TEST_CASE("cudnn.Dropout matches nn.Dropout (v2, v1, training, evaluation, in place, p = 0) in every dtype") {
  Generator gen(3701);
  INFO("seed 3701");
  for (const Case& c : kCases) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (bool nc : {false, true}) {
        INFO("p ", c.p, c.v1 ? " v1" : " v2", c.inplace ? " in place" : "", c.training ? " training" : " evaluate");
        nn::Dropout ref(c.p, c.v1, c.inplace);
        cudnn::Dropout twin(c.p, c.v1, c.inplace);
        if (!c.training) {
          ref.evaluate();
          twin.evaluate();
        }
        // expect_twin_matches seeds both forwards alike: a different mask would fail it at once
        expect_twin_matches(ref, twin, uniform({13, 21}, -1, 1, gen, DType::Float64), dt,
                            TwinTolerance::for_dtype(dt), nc);
      }
    }
  }
}

TEST_CASE("cudnn.Dropout draws nn's mask from the same seed, bit for bit") {
  Generator gen(3702);
  const Tensor x = uniform({64, 33}, -1, 1, gen, DType::Float64);
  for (double p : {0.1, 0.5, 0.9}) {
    INFO("p ", p);
    nn::Dropout ref(p);
    cudnn::Dropout twin(p);
    ref.to(DType::Float64);
    twin.to(gpu);
    manual_seed(5);
    const Tensor y = ref.forward(x).clone();
    manual_seed(5);
    const Tensor yg = twin.forward(x.to(gpu));
    REQUIRE(twin.noise.is_cuda());
    CHECK(max_abs_diff(twin.noise, ref.noise) == 0);
    CHECK(max_abs_diff(yg, y) == 0);
    // float32 on the GPU: the same kept positions
    cudnn::Dropout f32(p);
    f32.to(gpu);
    manual_seed(5);
    f32.forward(x.to(gpu, DType::Float32));
    manual_seed(5);
    ref.forward(x);
    CHECK(max_abs_diff(f32.noise.ne(0.0).cpu(), ref.noise.ne(0.0)) == 0);
  }
}

TEST_CASE("cudnn.Dropout in place masks the input itself") {
  Generator gen(3703);
  cudnn::Dropout twin(0.5, false, true);
  twin.to(gpu);
  const Tensor x0 = uniform({6, 7}, -1, 1, gen, DType::Float32, gpu);
  Tensor x = x0.clone();
  CHECK(twin.forward(x).is_same_view(x));
  CHECK(max_abs_diff(x, x0.mul(twin.noise)) == 0);
  Tensor g = ones({6, 7}, DType::Float32, gpu);
  CHECK(twin.backward(x, g).is_same_view(g));
  CHECK(max_abs_diff(g, twin.noise) == 0);
}

TEST_CASE("cudnn.Dropout with p = 0 or in evaluation hands back the input and gradOutput themselves") {
  Generator gen(3705);
  const Tensor x = uniform({6, 7}, -1, 1, gen, DType::Float16, gpu);
  const Tensor g = uniform({6, 7}, -1, 1, gen, DType::Float16, gpu);
  cudnn::Dropout none(0);
  none.to(gpu);
  CHECK(none.forward(x).is_same_view(x));
  CHECK(none.backward(x, g).is_same_view(g));
  cudnn::Dropout eval(0.5);
  eval.to(gpu);
  eval.evaluate();
  CHECK(eval.forward(x).is_same_view(x));
  CHECK(eval.backward(x, g).is_same_view(g));
}

TEST_CASE("cudnn.Dropout convert round trip, printing and errors") {
  Generator gen(3704);
  auto d = std::make_shared<nn::Dropout>(0.3);
  d->evaluate();  // a deterministic output to compare, and the mode must survive the round trip
  expect_convert_roundtrip(d, uniform({4, 5}, -1, 1, gen));
  expect_convert_roundtrip(std::make_shared<nn::Dropout>(0.3), uniform({4, 5}, -1, 1, gen));
  cudnn::Dropout twin(0.3);
  CHECK(twin.str() == "cudnn.Dropout(0.300000)");
  CHECK_THROWS_WITH_AS(twin.forward(ones({2})),
                       "cudnn.Dropout::updateOutput: expected input on a CUDA device, got float32 [2] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2}, DType::Int64, gpu)),
                       "cudnn.Dropout::updateOutput: expected a float32, float64, float16 or bfloat16 input, got "
                       "int64 [2] on cuda:0",
                       Error);
  twin.p = 1.5;
  CHECK_THROWS_WITH_AS(twin.forward(ones({2}, DType::Float32, gpu)),
                       "cudnn.Dropout::updateOutput: expected 0 <= p < 1, got 1.500000", Error);
  cudnn::Dropout fresh(0.5);
  CHECK_THROWS_WITH_AS(fresh.backward(ones({2}, DType::Float32, gpu), ones({2}, DType::Float32, gpu)),
                       "cudnn.Dropout::updateGradInput: expected a forward() in training mode first with input [2]",
                       Error);
}
