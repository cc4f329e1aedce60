// test_ClassNLLCriterion.cpp: cudnn.ClassNLLCriterion against nn.ClassNLLCriterion in every
// dtype (batch and single inputs, class weights, sizeAverage on and off, ignored targets,
// every target ignored, targets of every dtype, a batch large enough to spread over the
// kernel's threads), a convert round trip, and nn's own error messages for bad targets.
#include <doctest/doctest.h>

#include <cmath>

#include "cudnn/ClassNLLCriterion.h"
#include "nn/ClassNLLCriterion.h"
#include "tests/support/ClassCriterionCases.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}  // namespace

TEST_CASE("cudnn.ClassNLLCriterion matches nn (weights, sizeAverage, ignoreIndex, batch and single) in every dtype") {
  // log-probabilities or not, the NLL is linear in its input
  expect_class_criterion_matches<nn::ClassNLLCriterion, cudnn::ClassNLLCriterion>({{7, 5}, {5}, {1, 3}}, 3801, -3, 0);
  // a scalar target for a single sample
  nn::ClassNLLCriterion ref;
  cudnn::ClassNLLCriterion twin;
  Generator gen(3805);
  expect_twin_criterion_matches(ref, twin, uniform({4}, -3, 0, gen, DType::Float64), scalar_tensor(1, DType::Int64));
  // many samples: the reduction spreads over all of the kernel's threads, in every dtype
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    nn::ClassNLLCriterion big(uniform({10}, 0.1, 2, gen, DType::Float64));
    cudnn::ClassNLLCriterion bigTwin(big.weights);
    expect_twin_criterion_matches(big, bigTwin, uniform({3000, 10}, -3, 0, gen, DType::Float64),
                                  class_targets(gen, {3000}, 10, 7), dt, TwinTolerance::for_dtype(dt));
  }
}

TEST_CASE("cudnn.ClassNLLCriterion takes targets of any dtype holding integers") {
  Generator gen(3802);
  nn::ClassNLLCriterion ref;
  ref.to(DType::Float64);
  cudnn::ClassNLLCriterion twin;
  twin.to(gpu);
  twin.to(DType::Float64);
  const Tensor x = uniform({6, 4}, -3, 0, gen, DType::Float64);
  const Tensor t = from_vector<double>({1, 0, 3, 2, 2, 0});
  const double want = ref.forward(x, t);
  const Tensor gwant = ref.backward(x, t).clone();
  for (DType dt : {DType::Int64, DType::UInt8, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO("target ", name(dt));
    const Tensor tg = t.to(gpu, dt);
    CHECK(twin.forward(x.to(gpu), tg) == doctest::Approx(want).epsilon(1e-14));
    CHECK(max_abs_diff(twin.backward(x.to(gpu), tg), gwant) < 1e-15);
  }
  // non-contiguous input and target
  const Tensor xt = x.t().contiguous().to(gpu).t();
  const Tensor tt = from_vector<int64_t>({1, 9, 0, 9, 3, 9, 2, 9, 2, 9, 0, 9}, {6, 2}).to(gpu).select(1, 0);
  CHECK(twin.forward(xt, tt) == doctest::Approx(want).epsilon(1e-14));
  CHECK(max_abs_diff(twin.backward(xt, tt), gwant) < 1e-15);
}

TEST_CASE("cudnn.ClassNLLCriterion with every target ignored gives loss 0 and zero gradients") {
  Generator gen(3803);
  for (bool weighted : {false, true}) {
    cudnn::ClassNLLCriterion twin(weighted ? uniform({4}, 0.1, 2, gen) : Tensor(), true, 0);
    twin.to(gpu);
    const Tensor x = uniform({3, 4}, -3, 0, gen, DType::Float32, gpu);
    const Tensor t = zeros({3}, DType::Int64, gpu);
    CHECK(twin.forward(x, t) == 0);
    CHECK(twin.backward(x, t).abs().sum().item() == 0);
  }
}

TEST_CASE("cudnn.ClassNLLCriterion convert round trip") {
  Generator gen(3804);
  expect_criterion_convert_roundtrip(std::make_shared<nn::ClassNLLCriterion>(uniform({5}, 0.1, 2, gen), true, 1),
                                     uniform({6, 5}, -3, 0, gen), class_targets(gen, {6}, 5));
  expect_criterion_convert_roundtrip(std::make_shared<nn::ClassNLLCriterion>(), uniform({6, 5}, -3, 0, gen),
                                     class_targets(gen, {6}, 5).to(DType::Float64));
}

TEST_CASE("cudnn.ClassNLLCriterion errors name the bad target and its position, as nn's do") {
  cudnn::ClassNLLCriterion w(from_vector<float>({1, 2, 3}));
  CHECK(w.str() == "cudnn.ClassNLLCriterion");
  w.to(gpu);
  const Tensor x = zeros({2, 3}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<int64_t>({1, 3}).to(gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected target class indices in [0, 2] (0-based) or "
                       "ignoreIndex -100, got 3 at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<int64_t>({-1, 0}).to(gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected target class indices in [0, 2] (0-based) or "
                       "ignoreIndex -100, got -1 at target[0]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<float>({0, 1.5f}).to(gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected integer class indices in the target, got 1.5 "
                       "at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<double>({NAN, 1}).to(gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected integer class indices in the target, got nan "
                       "at target[0]",
                       Error);
  // backward does not wait for the device to check targets: a bad one contributes nothing
  const Tensor g = w.backward(x, from_vector<int64_t>({1, 7}).to(gpu));
  CHECK(g.get({0, 1}) == doctest::Approx(-1.0));
  CHECK(g.select(0, 1).abs().sum().item() == 0);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<int64_t>({1, 2})),
                       "cudnn.ClassNLLCriterion::updateOutput: expected the target on cuda:0 (the input's device), "
                       "got int64 [2] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 3}), from_vector<int64_t>({1, 2})),
                       "cudnn.ClassNLLCriterion::updateOutput: expected input on a CUDA device, got float32 [2 x 3] "
                       "on cpu (move it with .to(tensor::Device::cuda()))",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, zeros({2, 1}, DType::Int64, gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected a target of [2] for input [2 x 3], got [2 x 1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.backward(zeros({2, 3, 1}, DType::Float32, gpu), zeros({2}, DType::Int64, gpu)),
                       "cudnn.ClassNLLCriterion::updateGradInput: expected input of [classes] or [batch x classes], "
                       "got [2 x 3 x 1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 4}, DType::Float32, gpu), zeros({2}, DType::Int64, gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected weights of [4] for 4 classes (input [2 x 4]), "
                       "got [3]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 3}, DType::Float64, gpu), zeros({2}, DType::Int64, gpu)),
                       doctest::Contains("expected input of weights's dtype and device (float32 on cuda:0), got float64"),
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 3}, DType::Int64, gpu), zeros({2}, DType::Int64, gpu)),
                       "cudnn.ClassNLLCriterion::updateOutput: expected a float32, float64, float16 or bfloat16 input, "
                       "got int64 [2 x 3] on cuda:0",
                       Error);
}

TEST_CASE("cudnn.ClassNLLCriterion: NaN and +-Inf inputs give nn's loss and gradient (Note [NaN and Inf])") {
  expect_class_criterion_nonfinite<nn::ClassNLLCriterion, cudnn::ClassNLLCriterion>({{7, 5}, {5}, {4, 3}}, 3901);
}
