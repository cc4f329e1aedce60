// test_CrossEntropyCriterion.cpp: cudnn.CrossEntropyCriterion (cuDNN log-softmax + the NLL
// kernels) against nn.CrossEntropyCriterion in every dtype (batch and single inputs,
// weights, sizeAverage, ignored targets), stability for large scores, logProbs, a convert
// round trip, and nn's error messages.
#include <doctest/doctest.h>

#include <cmath>

#include "cudnn/CrossEntropyCriterion.h"
#include "nn/CrossEntropyCriterion.h"
#include "tests/support/ClassCriterionCases.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}

TEST_CASE("cudnn.CrossEntropyCriterion matches nn (weights, sizeAverage, ignoreIndex, batch and single) in every dtype") {
  expect_class_criterion_matches<nn::CrossEntropyCriterion, cudnn::CrossEntropyCriterion>(
      {{7, 5}, {5}, {1, 3}, {300, 11}}, 3901);
  nn::CrossEntropyCriterion ref;
  cudnn::CrossEntropyCriterion twin;
  Generator gen(3902);
  expect_twin_criterion_matches(ref, twin, uniform({4}, -3, 3, gen, DType::Float64), scalar_tensor(1, DType::Int64));
}

TEST_CASE("cudnn.CrossEntropyCriterion is stable for large scores and keeps logProbs") {
  const Tensor x = from_vector<double>({1000, 0, -1000, -1000, 1000, 999}, {2, 3});
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO(name(dt));
    cudnn::CrossEntropyCriterion ce({}, false);
    ce.to(gpu);
    const Tensor xg = x.to(gpu, dt);
    CHECK(ce.forward(xg, from_vector<int64_t>({0, 1}).to(gpu)) ==
          doctest::Approx(std::log1p(std::exp(-1.0))).epsilon(1e-6));
    CHECK(ce.forward(xg, from_vector<int64_t>({1, 2}).to(gpu)) ==
          doctest::Approx(1000 + 1 + std::log1p(std::exp(-1.0))).epsilon(1e-6));
    CHECK_FALSE(has_nonfinite(ce.backward(xg, from_vector<int64_t>({1, 2}).to(gpu))));
    CHECK(ce.logProbs.is_cuda());
    CHECK(ce.logProbs.sizes() == x.sizes());
    CHECK(ce.logProbs.get({1, 1}) == doctest::Approx(-std::log1p(std::exp(-1.0))).epsilon(1e-6));
  }
  // 16-bit scores compute in float32: logProbs is float32, gradInput the input's dtype
  cudnn::CrossEntropyCriterion h;
  h.to(gpu);
  const Tensor xh = from_vector<double>({1, 2, 3, 0.5, -1, 0}, {2, 3}).to(gpu, DType::Float16);
  h.forward(xh, from_vector<int64_t>({2, 0}).to(gpu));
  CHECK(h.logProbs.dtype() == DType::Float32);
  CHECK(h.backward(xh, from_vector<int64_t>({2, 0}).to(gpu)).dtype() == DType::Float16);
}

TEST_CASE("cudnn.CrossEntropyCriterion convert round trip") {
  Generator gen(3903);
  expect_criterion_convert_roundtrip(std::make_shared<nn::CrossEntropyCriterion>(uniform({4}, 0.1, 2, gen), true, 2),
                                     uniform({6, 4}, -3, 3, gen), class_targets(gen, {6}, 4));
}

TEST_CASE("cudnn.CrossEntropyCriterion printing and errors") {
  cudnn::CrossEntropyCriterion ce;
  CHECK(ce.str() == "cudnn.CrossEntropyCriterion");
  ce.to(gpu);
  const Tensor x = zeros({3, 2}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(ce.forward(x, from_vector<double>({0, 1, 2}).to(gpu)),
                       "cudnn.CrossEntropyCriterion::updateOutput: expected target class indices in [0, 1] (0-based) "
                       "or ignoreIndex -100, got 2 at target[2]",
                       Error);
  CHECK_THROWS_WITH_AS(ce.forward(x, from_vector<double>({0, NAN, 1}).to(gpu)),
                       "cudnn.CrossEntropyCriterion::updateOutput: expected integer class indices in the target, got "
                       "nan at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(ce.backward(x, zeros({2}, DType::Int64, gpu)),
                       "cudnn.CrossEntropyCriterion::updateGradInput: expected a target of [3] for input [3 x 2], got "
                       "[2]",
                       Error);
  CHECK_THROWS_WITH_AS(ce.forward(zeros({3, 2}), zeros({3})),
                       doctest::Contains("cudnn.CrossEntropyCriterion::updateOutput: expected input on a CUDA device"),
                       Error);
  CHECK_THROWS_WITH_AS(ce.forward(x, zeros({3})),
                       "cudnn.CrossEntropyCriterion::updateOutput: expected the target on cuda:0 (the input's "
                       "device), got float32 [3] on cpu",
                       Error);
}

TEST_CASE("cudnn.CrossEntropyCriterion: NaN and +-Inf inputs give nn's loss and gradient (Note [NaN and Inf])") {
  expect_class_criterion_nonfinite<nn::CrossEntropyCriterion, cudnn::CrossEntropyCriterion>({{7, 5}, {5}, {4, 3}},
                                                                                            3901);
}
