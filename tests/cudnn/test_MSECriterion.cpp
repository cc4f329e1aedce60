// test_MSECriterion.cpp: cudnn.MSECriterion (tensor ops on the device, the loss reduced in
// float64) against nn.MSECriterion in every dtype (sizeAverage on and off, odd sizes, a large float16 input whose sum of squares exceeds float16's range),
// non-contiguous inputs, a convert round trip and the errors.
#include <doctest/doctest.h>

#include <cmath>

#include "cudnn/MSECriterion.h"
#include "nn/MSECriterion.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}

TEST_CASE("cudnn.MSECriterion matches nn.MSECriterion (sizeAverage, ranks, odd sizes) in every dtype") {
  Generator gen(4201);
  INFO("seed 4201");
  struct Case {
    Shape input, target;
  };
  const Case cases[] = {{{4, 5}, {4, 5}}, {{7}, {7}}, {{2, 3, 4}, {2, 3, 4}}, {{1, 1}, {1, 1}}, {{33, 17}, {33, 17}}};
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (const Case& c : cases) {
      for (bool avg : {true, false}) {
        INFO(name(dt), " input ", shape_str(c.input), " target ", shape_str(c.target), avg ? " sizeAverage" : " sum");
        nn::MSECriterion ref(avg);
        cudnn::MSECriterion twin(avg);
        expect_twin_criterion_matches(ref, twin, uniform(c.input, -1, 1, gen, DType::Float64),
                                      uniform(c.target, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt));
      }
    }
  }
}

TEST_CASE("cudnn.MSECriterion sums float16 squares beyond float16's range without overflow") {
  cudnn::MSECriterion sum(false);
  sum.to(gpu);
  const Tensor x = full({100, 100}, 30.0, DType::Float16, gpu), y = zeros({100, 100}, DType::Float16, gpu);
  CHECK(sum.forward(x, y) == doctest::Approx(9.0e6));  // 10000 * 900: far above 65504
  cudnn::MSECriterion avg;
  avg.to(gpu);
  CHECK(avg.forward(x, y) == doctest::Approx(900));
}

TEST_CASE("cudnn.MSECriterion takes non-contiguous inputs and targets") {
  const Tensor x = from_vector<double>({1, 2, 3, 4}, {2, 2});
  const Tensor y = from_vector<double>({0, 2, 5, 4.5});
  cudnn::MSECriterion mse;
  mse.to(gpu);
  const Tensor xt = from_vector<double>({1, 3, 2, 4}, {2, 2}).to(gpu).t();
  const Tensor yt = from_vector<double>({0, 5, 2, 4.5}, {2, 2}).to(gpu).t();
  CHECK(mse.forward(xt, yt) == doctest::Approx(5.25 / 4).epsilon(1e-15));
  CHECK(mse.forward(x.to(gpu), y.view({2, 2}).to(gpu)) == doctest::Approx(5.25 / 4).epsilon(1e-15));
  // a target with the right count but another shape is refused on both backends (issue 15)
  CHECK_THROWS_WITH_AS(mse.forward(x.to(gpu), y.to(gpu)),
                       "cudnn.MSECriterion::updateOutput: expected a target of the input's shape [2 x 2], got [4]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::MSECriterion().forward(x, y),
                       "nn.MSECriterion::updateOutput: expected a target of the input's shape [2 x 2], got [4]", Error);
  CHECK(mse.backward(xt, yt).to_vector<double>() == std::vector<double>{0.5, 0, -1, -0.25});
  CHECK(mse.gradInput.is_cuda());
}

TEST_CASE("cudnn.MSECriterion convert round trip, printing and errors") {
  Generator gen(4202);
  expect_criterion_convert_roundtrip(std::make_shared<nn::MSECriterion>(), uniform({3, 4}, -1, 1, gen),
                                     uniform({3, 4}, -1, 1, gen));
  expect_criterion_convert_roundtrip(std::make_shared<nn::MSECriterion>(false), uniform({5}, -1, 1, gen),
                                     uniform({5}, -1, 1, gen));
  cudnn::MSECriterion mse;
  CHECK(mse.str() == "cudnn.MSECriterion");
  mse.to(gpu);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2, 2}, DType::Float32, gpu), zeros({5}, DType::Float32, gpu)),
                       "cudnn.MSECriterion::updateOutput: expected a target of the input's shape [2 x 2], got [5]",
                       Error);
  CHECK_THROWS_WITH_AS(mse.backward(zeros({2, 2}, DType::Float32, gpu), zeros({4}, DType::Float64, gpu)),
                       doctest::Contains("cudnn.MSECriterion::updateGradInput: expected target of input's dtype and "
                                         "device (float32 on cuda:0), got float64 [4] on cuda:0"),
                       Error);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2, 2}, DType::Float32, gpu), zeros({4})),
                       doctest::Contains("cudnn.MSECriterion::updateOutput: expected target of input's dtype and "
                                         "device (float32 on cuda:0), got float32 [4] on cpu"),
                       Error);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2, 2}), zeros({4})),
                       "cudnn.MSECriterion::updateOutput: expected input on a CUDA device, got float32 [2 x 2] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2}, DType::Int64, gpu), zeros({2}, DType::Int64, gpu)),
                       "cudnn.MSECriterion::updateOutput: expected a float32, float64, float16 or bfloat16 input, got "
                       "int64 [2] on cuda:0",
                       Error);
}

TEST_CASE("cudnn.MSECriterion: NaN and +-Inf inputs give nn's loss and gradient (Note [NaN and Inf])") {
  Generator gen(4211);
  for (const Shape& s : {Shape{4, 5}, Shape{33, 17}}) {
    for (bool avg : {true, false}) {
      INFO("input ", shape_str(s), avg ? " sizeAverage" : " sum");
      nn::MSECriterion ref(avg);
      cudnn::MSECriterion twin(avg);
      const Tensor x = uniform(s, -1, 1, gen, DType::Float64), t = uniform(s, -1, 1, gen, DType::Float64);
      expect_twin_criterion_nonfinite_matches(ref, twin, x, t);  // NaN, +Inf and -Inf: a NaN loss
      // +Inf and -Inf alone: an infinite loss, infinite gradients at those two entries
      Tensor xi = x.clone();
      xi.view({-1}).narrow(0, 3, 1).fill_(INFINITY);
      xi.view({-1}).narrow(0, 5, 1).fill_(-INFINITY);
      const double loss = ref.forward(xi, t);
      CHECK(loss == INFINITY);
      twin.to(gpu);
      CHECK(twin.forward(xi.to(gpu, DType::Float32), t.to(gpu, DType::Float32)) == loss);
      expect_same_nonfinite("gradInput", twin.backward(xi.to(gpu, DType::Float32), t.to(gpu, DType::Float32)),
                            ref.backward(xi, t), 1e-4);
    }
  }
}
