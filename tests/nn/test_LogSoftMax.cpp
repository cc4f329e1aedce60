// test_LogSoftMax.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/LogSoftMax.h"
#include "nn/SoftMax.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

TEST_CASE("LogSoftMax of [0, ln 2, ln 3] is log [1/6, 2/6, 3/6]; large inputs stay finite") {
  nn::LogSoftMax m;
  const Tensor x = from_vector<double>({0, std::log(2.0), std::log(3.0)}, {3});
  const Tensor y = m.forward(x);
  for (int i = 0; i < 3; ++i) CHECK(y.get({i}) == doctest::Approx(std::log((i + 1) / 6.0)).epsilon(1e-14));
  // log(softmax) would give -inf for the first entry of the second row; log-softmax is exact
  const Tensor xb = from_vector<float>({1000, 1000, -1000, 1000}, {2, 2});
  const Tensor yb = m.forward(xb);
  CHECK_FALSE(has_nonfinite(yb));
  CHECK(yb.get({0, 0}) == doctest::Approx(-std::log(2.0)).epsilon(1e-6));
  CHECK(yb.get({1, 0}) == -2000);
  CHECK(yb.get({1, 1}) == 0);
}

TEST_CASE("LogSoftMax is the log of SoftMax, over Torch's dimension for 1D to 4D") {
  nn::LogSoftMax m;
  nn::SoftMax s;
  Generator gen(12);
  // x - log sum exp x over the feature maps (dim 0 of [C x H x W], dim 1 of [N x C x H x W])
  const Tensor x3 = uniform({5, 3, 4}, -3, 3, gen, DType::Float64);
  CHECK(max_abs_diff(m.forward(x3), x3.sub(x3.exp().sum(0, true).log())) < 1e-14);
  const Tensor x4 = uniform({2, 5, 3, 4}, -3, 3, gen, DType::Float64);
  CHECK(max_abs_diff(m.forward(x4), x4.sub(x4.exp().sum(1, true).log())) < 1e-14);
  for (const Shape& shape : {Shape{7}, Shape{4, 7}, Shape{5, 3, 4}, Shape{2, 5, 3, 4}, Shape{200, 300}}) {
    CAPTURE(shape_str(shape));
    const Tensor x = uniform(shape, -5, 5, gen, DType::Float64);
    CHECK(max_abs_diff(m.forward(x), s.forward(x).log()) < 1e-13);
  }
}

TEST_CASE("LogSoftMax backward: dx = dy - exp(y) * sum(dy)") {
  nn::LogSoftMax m;
  const Tensor x = from_vector<double>({0, std::log(2.0), std::log(3.0)}, {3});
  m.forward(x);
  const Tensor gi = m.backward(x, from_vector<double>({1, 0, 0}, {3}));
  const std::vector<double> want{1 - 1.0 / 6, -2.0 / 6, -3.0 / 6};
  for (int i = 0; i < 3; ++i) CHECK(gi.get({i}) == doctest::Approx(want[i]).epsilon(1e-14));
}

TEST_CASE("LogSoftMax gradients (random shapes, 1D to 4D)") {
  Generator gen(20261207);
  INFO("size seed 20261207");
  for (int trial = 0; trial < 3; ++trial) {
    const Shape shapes[] = {{random_size(gen, 1, 8)},
                            {random_size(gen, 1, 4), random_size(gen, 1, 6)},
                            {random_size(gen, 1, 4), random_size(gen, 1, 3), random_size(gen, 1, 3)},
                            {random_size(gen, 1, 3), random_size(gen, 1, 4), random_size(gen, 1, 3), 2}};
    for (const Shape& s : shapes) {
      nn::LogSoftMax m;
      m.to(DType::Float64);
      expect_gradients_ok(m, uniform(s, -2, 2, gen, DType::Float64));
    }
  }
}

TEST_CASE("LogSoftMax state round trip, printing and errors") {
  Generator gen(2);
  nn::LogSoftMax a, b;
  expect_state_roundtrip_ok(a, b, uniform({2, 5}, -2, 2, gen));
  CHECK(a.str() == "nn.LogSoftMax");
  expect_prints_type(a);
  CHECK(a.isLog());
  CHECK_THROWS_WITH_AS(a.forward(zeros({1, 2, 3, 4, 5})),
                       "nn.LogSoftMax::updateOutput: expected input of [n], [batch x n], [C x H x W] or [N x C x H x "
                       "W], got [1 x 2 x 3 x 4 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({3}, DType::BFloat16)),
                       "nn.LogSoftMax::updateOutput: expected float32 or float64 input, got bfloat16 [3] on cpu",
                       Error);
}

TEST_CASE("LogSoftMax: a row with a NaN or +Inf is NaN, -Inf entries give -Inf (Note [NaN and Inf])") {
  nn::LogSoftMax m;
  // rows: NaN; +Inf; -Inf with log(1), log(3) (softmax 0, 1/4, 3/4); all -Inf
  const Tensor x = from_vector<double>({1, kNaN, 2, 0, kInf, 1, -kInf, 0, std::log(3.0), -kInf, -kInf, -kInf}, {4, 3});
  const Tensor y = m.forward(x);
  expect_values("output", y,
                {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, -kInf, std::log(0.25), std::log(0.75), kNaN, kNaN, kNaN});
  const std::vector<double> g =
      m.backward(x, from_vector<double>(std::vector<double>(12, 0.5), {4, 3})).to_vector<double>();
  for (int i : {0, 1, 2, 3, 4, 5, 9, 10, 11}) CHECK(std::isnan(g[i]));
  for (int i : {6, 7, 8}) CHECK(std::isfinite(g[i]));
}
