// test_SpatialCrossEntropyCriterion.cpp: cudnn.SpatialCrossEntropyCriterion (cuDNN's
// channel-mode log-softmax on [N x C x H x W] + the NLL over pixels) against nn's in every
// dtype (weights, sizeAverage, ignored pixels, odd sizes, batch 1), a convert round trip and
// nn's error messages.
#include <doctest/doctest.h>

#include "cudnn/SpatialCrossEntropyCriterion.h"
#include "nn/SpatialCrossEntropyCriterion.h"
#include "tests/support/ClassCriterionCases.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}

TEST_CASE("cudnn.SpatialCrossEntropyCriterion matches nn (weights, sizeAverage, ignoreIndex, odd sizes) in every dtype") {
  expect_class_criterion_matches<nn::SpatialCrossEntropyCriterion, cudnn::SpatialCrossEntropyCriterion>(
      {{2, 3, 5, 4}, {1, 4, 7, 3}, {3, 2, 1, 1}, {2, 5, 16, 16}}, 4001);
}

TEST_CASE("cudnn.SpatialCrossEntropyCriterion takes a non-contiguous input and a float target") {
  Generator gen(4002);
  nn::SpatialCrossEntropyCriterion ref(from_vector<double>({1, 0.5, 2}));
  cudnn::SpatialCrossEntropyCriterion twin(from_vector<double>({1, 0.5, 2}));
  twin.to(gpu);
  twin.to(DType::Float64);
  const Tensor x = uniform({2, 3, 4, 5}, -3, 3, gen, DType::Float64);
  const Tensor t = class_targets(gen, {2, 4, 5}, 3, 4);
  const Tensor xt = x.transpose(2, 3).contiguous().to(gpu).transpose(2, 3);  // same values, other strides
  CHECK(twin.forward(xt, t.to(gpu, DType::Float32)) == doctest::Approx(ref.forward(x, t)).epsilon(1e-12));
  CHECK(max_rel_error(twin.backward(xt, t.to(gpu, DType::Float32)), ref.backward(x, t)) < 1e-12);
}

TEST_CASE("cudnn.SpatialCrossEntropyCriterion convert round trip") {
  Generator gen(4003);
  expect_criterion_convert_roundtrip(std::make_shared<nn::SpatialCrossEntropyCriterion>(), uniform({2, 3, 4, 5}, -3, 3, gen),
                                     class_targets(gen, {2, 4, 5}, 3, 5));
}

TEST_CASE("cudnn.SpatialCrossEntropyCriterion printing and errors") {
  cudnn::SpatialCrossEntropyCriterion sce;
  CHECK(sce.str() == "cudnn.SpatialCrossEntropyCriterion");
  sce.to(gpu);
  const Tensor x = zeros({2, 2, 3, 4}, DType::Float64, gpu);
  CHECK_THROWS_WITH_AS(sce.forward(zeros({2, 3, 4}, DType::Float64, gpu), zeros({2, 3, 4}, DType::Float64, gpu)),
                       "cudnn.SpatialCrossEntropyCriterion::updateOutput: expected input of [N x C x H x W], got "
                       "[2 x 3 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(sce.forward(x, zeros({2, 4, 3}, DType::Int64, gpu)),
                       "cudnn.SpatialCrossEntropyCriterion::updateOutput: expected a target of [2 x 3 x 4] "
                       "([N x H x W]) for input [2 x 2 x 3 x 4], got [2 x 4 x 3]",
                       Error);
  Tensor t = zeros({2, 3, 4}, DType::Int64);
  t.set({1, 0, 2}, 2);
  CHECK_THROWS_WITH_AS(sce.forward(x, t.to(gpu)),
                       "cudnn.SpatialCrossEntropyCriterion::updateOutput: expected target class indices in [0, 1] "
                       "(0-based) or ignoreIndex -100, got 2 at target[1, 0, 2]",
                       Error);
}

TEST_CASE("cudnn.SpatialCrossEntropyCriterion: NaN and +-Inf inputs give nn's loss and gradient (Note [NaN and Inf])") {
  expect_class_criterion_nonfinite<nn::SpatialCrossEntropyCriterion, cudnn::SpatialCrossEntropyCriterion>(
      {{2, 4, 3, 5}, {1, 3, 2, 2}}, 3901);
}
