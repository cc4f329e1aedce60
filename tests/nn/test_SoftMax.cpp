// test_SoftMax.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/SoftMax.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

namespace {
// softmax over `dim` with the tensor library's own operators
Tensor reference(const Tensor& x, int64_t dim) {
  const Tensor e = x.sub(x.max(dim, true).first).exp();
  return e.div(e.sum(dim, true));
}
}  // namespace

TEST_CASE("SoftMax of [0, ln 2, ln 3] is [1/6, 2/6, 3/6]; rows sum to 1; large inputs stay finite") {
  nn::SoftMax m;
  const Tensor x = from_vector<double>({0, std::log(2.0), std::log(3.0)}, {3});
  const Tensor y = m.forward(x);
  REQUIRE(y.sizes() == Shape{3});
  for (int i = 0; i < 3; ++i) CHECK(y.get({i}) == doctest::Approx((i + 1) / 6.0).epsilon(1e-14));

  // [batch x n]: each row separately; 1000 would overflow exp without the max subtracted
  const Tensor xb = from_vector<float>({0, std::log(2.0f), std::log(3.0f), 1000, 1000, 1000, -1000, 0, 1000}, {3, 3});
  const Tensor yb = m.forward(xb);
  CHECK_FALSE(has_nonfinite(yb));
  CHECK(yb.get({0, 2}) == doctest::Approx(0.5).epsilon(1e-6));
  for (int j = 0; j < 3; ++j) CHECK(yb.get({1, j}) == doctest::Approx(1.0 / 3).epsilon(1e-6));
  CHECK(yb.get({2, 2}) == 1);
  CHECK(yb.get({2, 0}) == 0);
  CHECK(max_abs_diff(yb.sum(1), ones({3})) < 1e-6);
  // -inf (a masked entry) gets exactly 0
  const Tensor ym = m.forward(from_vector<float>({-INFINITY, 0, 0, -INFINITY}, {1, 4}));
  CHECK(ym.to_vector<float>() == std::vector<float>{0, 0.5f, 0.5f, 0});
}

TEST_CASE("SoftMax follows Torch's dimension rules for 1D to 4D") {
  nn::SoftMax m;
  Generator gen(11);
  const Tensor x2 = uniform({4, 7}, -3, 3, gen, DType::Float64);
  CHECK(max_abs_diff(m.forward(x2), reference(x2, 1)) < 1e-15);
  // 3D [C x H x W] and 4D [N x C x H x W]: over the feature maps at each location
  const Tensor x3 = uniform({5, 3, 4}, -3, 3, gen, DType::Float64);
  CHECK(max_abs_diff(m.forward(x3), reference(x3, 0)) < 1e-15);
  const Tensor x4 = uniform({2, 5, 3, 4}, -3, 3, gen, DType::Float64);
  CHECK(max_abs_diff(m.forward(x4), reference(x4, 1)) < 1e-15);
  CHECK(max_abs_diff(m.output.sum(1), ones({2, 3, 4}, DType::Float64)) < 1e-14);
  // float32, larger rows (the parallel path)
  const Tensor xl = uniform({300, 200}, -20, 20, gen, DType::Float32);
  CHECK(max_abs_diff(m.forward(xl), reference(xl.to(DType::Float64), 1)) < 1e-6);
  // non-contiguous input
  const Tensor xt = uniform({6, 3}, -3, 3, gen, DType::Float64).t();
  CHECK(max_abs_diff(m.forward(xt), reference(xt, 1)) < 1e-15);
}

TEST_CASE("SoftMax backward: dx = y * (dy - <dy, y>)") {
  nn::SoftMax m;
  const Tensor x = from_vector<double>({0, std::log(2.0), std::log(3.0)}, {3});
  m.forward(x);
  // d y_2 / d x_j = y_2 * (delta_2j - y_j) with y = [1/6, 2/6, 3/6]
  const Tensor gi = m.backward(x, from_vector<double>({0, 0, 1}, {3}));
  const std::vector<double> want{-0.5 / 6, -1.0 / 6, 0.5 * 0.5};
  for (int i = 0; i < 3; ++i) CHECK(gi.get({i}) == doctest::Approx(want[i]).epsilon(1e-14));
}

TEST_CASE("SoftMax gradients (random shapes, 1D to 4D)") {
  Generator gen(20261206);
  INFO("size seed 20261206");
  for (int trial = 0; trial < 3; ++trial) {
    const Shape shapes[] = {{random_size(gen, 1, 8)},
                            {random_size(gen, 1, 4), random_size(gen, 1, 6)},
                            {random_size(gen, 1, 4), random_size(gen, 1, 3), random_size(gen, 1, 3)},
                            {random_size(gen, 1, 3), random_size(gen, 1, 4), random_size(gen, 1, 3), 2}};
    for (const Shape& s : shapes) {
      nn::SoftMax m;
      m.to(DType::Float64);
      expect_gradients_ok(m, uniform(s, -2, 2, gen, DType::Float64));
    }
  }
}

TEST_CASE("SoftMax state round trip, printing and errors") {
  Generator gen(2);
  nn::SoftMax a, b;
  expect_state_roundtrip_ok(a, b, uniform({2, 5}, -2, 2, gen));
  CHECK(a.str() == "nn.SoftMax");
  expect_prints_type(a);
  CHECK_FALSE(a.isLog());
  CHECK_THROWS_WITH_AS(a.forward(zeros({1, 2, 3, 4, 5})),
                       "nn.SoftMax::updateOutput: expected input of [n], [batch x n], [C x H x W] or [N x C x H x W], "
                       "got [1 x 2 x 3 x 4 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(scalar_tensor(1)),
                       "nn.SoftMax::updateOutput: expected input of [n], [batch x n], [C x H x W] or [N x C x H x W], "
                       "got []",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({3}, DType::Int64)),
                       "nn.SoftMax::updateOutput: expected float32 or float64 input, got int64 [3] on cpu", Error);
  a.forward(zeros({2, 3}));
  CHECK_THROWS_WITH_AS(a.backward(zeros({2, 3}), zeros({2, 4})),
                       "nn.SoftMax::updateGradInput: expected gradOutput of the input's shape and dtype (float32 [2 x "
                       "3] on cpu), got float32 [2 x 4] on cpu",
                       Error);
}

TEST_CASE("SoftMax: a row with a NaN or +Inf is NaN, -Inf entries give 0 (Note [NaN and Inf])") {
  nn::SoftMax m;
  // rows: NaN; +Inf; -Inf with log(1), log(3) (softmax 0, 1/4, 3/4); all -Inf
  const Tensor x = from_vector<double>({1, kNaN, 2, 0, kInf, 1, -kInf, 0, std::log(3.0), -kInf, -kInf, -kInf}, {4, 3});
  const Tensor y = m.forward(x);
  expect_values("output", y, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, 0, 0.25, 0.75, kNaN, kNaN, kNaN});
  const std::vector<double> g =
      m.backward(x, from_vector<double>(std::vector<double>(12, 0.5), {4, 3})).to_vector<double>();
  for (int i : {0, 1, 2, 3, 4, 5, 9, 10, 11}) CHECK(std::isnan(g[i]));
  for (int i : {6, 7, 8}) CHECK(std::isfinite(g[i]));
}
