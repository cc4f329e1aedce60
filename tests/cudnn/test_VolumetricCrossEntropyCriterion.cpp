// test_VolumetricCrossEntropyCriterion.cpp: cudnn.VolumetricCrossEntropyCriterion (cuDNN's
// channel-mode log-softmax on [N x C x T x H x W] + the NLL over voxels) against nn's in every
// dtype (weights, sizeAverage, ignored voxels, odd sizes), a convert round trip and errors.
#include <doctest/doctest.h>

#include "cudnn/VolumetricCrossEntropyCriterion.h"
#include "nn/VolumetricCrossEntropyCriterion.h"
#include "tests/support/ClassCriterionCases.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}

TEST_CASE("cudnn.VolumetricCrossEntropyCriterion matches nn (weights, sizeAverage, ignoreIndex, odd sizes) in every dtype") {
  expect_class_criterion_matches<nn::VolumetricCrossEntropyCriterion, cudnn::VolumetricCrossEntropyCriterion>(
      {{2, 3, 2, 3, 4}, {1, 4, 3, 1, 5}, {2, 2, 1, 1, 1}}, 4101);
}

TEST_CASE("cudnn.VolumetricCrossEntropyCriterion convert round trip") {
  Generator gen(4102);
  expect_criterion_convert_roundtrip(
      std::make_shared<nn::VolumetricCrossEntropyCriterion>(uniform({3}, 0.1, 2, gen)),
      uniform({2, 3, 2, 3, 4}, -3, 3, gen), class_targets(gen, {2, 2, 3, 4}, 3, 5));
}

TEST_CASE("cudnn.VolumetricCrossEntropyCriterion printing and errors") {
  cudnn::VolumetricCrossEntropyCriterion vce;
  CHECK(vce.str() == "cudnn.VolumetricCrossEntropyCriterion");
  vce.to(gpu);
  CHECK_THROWS_WITH_AS(vce.forward(zeros({2, 3, 4, 5}, DType::Float32, gpu), zeros({2, 4, 5}, DType::Int64, gpu)),
                       "cudnn.VolumetricCrossEntropyCriterion::updateOutput: expected input of [N x C x T x H x W], "
                       "got [2 x 3 x 4 x 5]",
                       Error);
  Tensor t = zeros({1, 2, 2, 2}, DType::Int64);
  t.set({0, 1, 1, 0}, -3);
  CHECK_THROWS_WITH_AS(vce.forward(zeros({1, 2, 2, 2, 2}, DType::Float32, gpu), t.to(gpu)),
                       "cudnn.VolumetricCrossEntropyCriterion::updateOutput: expected target class indices in [0, 1] "
                       "(0-based) or ignoreIndex -100, got -3 at target[0, 1, 1, 0]",
                       Error);
}

TEST_CASE(
    "cudnn.VolumetricCrossEntropyCriterion: NaN and +-Inf inputs give nn's loss and gradient (Note [NaN and Inf])") {
  expect_class_criterion_nonfinite<nn::VolumetricCrossEntropyCriterion, cudnn::VolumetricCrossEntropyCriterion>(
      {{2, 3, 2, 3, 4}}, 3901);
}
