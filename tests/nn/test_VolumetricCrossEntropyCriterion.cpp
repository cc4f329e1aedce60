// test_VolumetricCrossEntropyCriterion.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/SpatialCrossEntropyCriterion.h"
#include "nn/VolumetricCrossEntropyCriterion.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

namespace {
Tensor random_targets(const Shape& shape, int64_t classes, Generator& gen) {
  Tensor t = empty(shape, DType::Int64);
  int64_t* p = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = gen.randint(classes);
  return t;
}
}  // namespace

TEST_CASE("VolumetricCrossEntropyCriterion = spatial criterion with time folded into height") {
  Generator gen(1212);
  INFO("seed 1212");
  const int64_t N = 2, C = 3, T = 2, H = 3, W = 2;
  const Tensor x = uniform({N, C, T, H, W}, -2, 2, gen, DType::Float64);
  const Tensor t = random_targets({N, T, H, W}, C, gen);
  const Tensor w = from_vector<double>({1, 0.5, 3});
  for (bool avg : {true, false}) {
    nn::VolumetricCrossEntropyCriterion vce(w, avg);
    nn::SpatialCrossEntropyCriterion sce(w, avg);
    const Tensor xs = x.view({N, C, T * H, W}), ts = t.view({N, T * H, W});
    CHECK(vce.forward(x, t) == doctest::Approx(sce.forward(xs, ts)).epsilon(1e-14));
    const Tensor g = vce.backward(x, t);
    CHECK(g.sizes() == x.sizes());
    CHECK(max_abs_diff(g.view({N, C, T * H, W}), sce.backward(xs, ts)) < 1e-15);
  }
  // a voxel by hand: one voxel, two classes, target 1: log(1 + e^(x0 - x1))
  nn::VolumetricCrossEntropyCriterion one;
  const Tensor v = from_vector<double>({0.3, -0.4}, {1, 2, 1, 1, 1});
  CHECK(one.forward(v, from_vector<int64_t>({1}, {1, 1, 1, 1})) == doctest::Approx(std::log1p(std::exp(0.7))));
}

TEST_CASE("VolumetricCrossEntropyCriterion printing and errors") {
  nn::VolumetricCrossEntropyCriterion vce;
  CHECK(vce.str() == "nn.VolumetricCrossEntropyCriterion");
  CHECK_THROWS_WITH_AS(vce.forward(zeros({1, 2, 3, 4}), zeros({1, 3, 4})),
                       "nn.VolumetricCrossEntropyCriterion::updateOutput: expected input of [N x C x T x H x W], got "
                       "[1 x 2 x 3 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(vce.forward(zeros({1, 2, 3, 4, 5}), zeros({1, 3, 4})),
                       "nn.VolumetricCrossEntropyCriterion::updateOutput: expected a target of [1 x 3 x 4 x 5] "
                       "([N x T x H x W]) for input [1 x 2 x 3 x 4 x 5], got [1 x 3 x 4]",
                       Error);
  Tensor t = zeros({1, 3, 4, 5});
  t.set({0, 2, 1, 4}, 0.5);
  CHECK_THROWS_WITH_AS(vce.forward(zeros({1, 2, 3, 4, 5}), t),
                       "nn.VolumetricCrossEntropyCriterion::updateOutput: expected integer class indices in the "
                       "target, got 0.5 at target[0, 2, 1, 4]",
                       Error);
}
