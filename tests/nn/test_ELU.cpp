// test_ELU.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/ELU.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

TEST_CASE("ELU closed forms: elu(-ln 2) = -alpha/2, derivative alpha/2") {
  const double l2 = std::log(2.0);
  for (double alpha : {1.0, 2.0, 0.5}) {
    CAPTURE(alpha);
    nn::ELU m(alpha);
    CHECK(m.coef() == alpha);
    const Tensor x = from_vector<double>({-l2, 0, 2, -1000}, {4});
    const Tensor y = m.forward(x);
    const std::vector<double> want{-alpha / 2, 0, 2, -alpha};
    for (int i = 0; i < 4; ++i) CHECK(y.to_vector<double>()[i] == doctest::Approx(want[i]).epsilon(1e-14));
    const Tensor gi = m.backward(x, from_vector<double>({1, 1, 3, 1}, {4}));
    // at x = 0 (y = 0) Torch takes the exponential branch: alpha * exp(0) = alpha
    const std::vector<double> dwant{alpha / 2, alpha, 3, 0};
    for (int i = 0; i < 4; ++i) CHECK(gi.to_vector<double>()[i] == doctest::Approx(dwant[i]).epsilon(1e-14));
  }
}

TEST_CASE("ELU float32 agrees with float64") {
  const Tensor x = arange(-20, 5, 0.00311, DType::Float32);
  nn::ELU m(1.5);
  const Tensor y = m.forward(x).to(DType::Float64);
  nn::ELU md(1.5);
  md.to(DType::Float64);
  CHECK(max_abs_diff(y, md.forward(x.to(DType::Float64))) < 5e-7);
}

TEST_CASE("ELU in place") {
  nn::ELU m(1.0, true);
  const double l2 = std::log(2.0);
  Tensor x = from_vector<double>({-l2, 3}, {2});
  const Tensor y = m.forward(x);
  CHECK(y.is_same_view(x));
  CHECK(x.get({0}) == doctest::Approx(-0.5).epsilon(1e-14));
  CHECK(x.get({1}) == 3);
  Tensor g = from_vector<double>({4, 5}, {2});
  const Tensor gi = m.backward(x, g);
  CHECK(gi.shares_storage(g));
  CHECK(g.get({0}) == doctest::Approx(2).epsilon(1e-14));  // 4 * (y + alpha) = 4 * 0.5
  CHECK(g.get({1}) == 5);
}

TEST_CASE("ELU gradients (random shapes and alphas, in place and not)") {
  Generator gen(20261205);
  INFO("size seed 20261205");
  for (int trial = 0; trial < 3; ++trial) {
    const Shape s{random_size(gen, 1, 4), random_size(gen, 1, 5), random_size(gen, 1, 3)};
    for (bool inplace : {false, true}) {
      for (double alpha : {1.0, 0.3}) {
        nn::ELU m(alpha, inplace);
        m.to(DType::Float64);
        expect_gradients_ok(m, uniform(s, -2, 1, gen, DType::Float64));
        expect_gradients_ok(m, uniform({random_size(gen, 1, 8)}, -2, 1, gen, DType::Float64));
      }
    }
  }
}

TEST_CASE("ELU state round trip, printing and errors") {
  Generator gen(2);
  nn::ELU a, b;
  expect_state_roundtrip_ok(a, b, uniform({2, 3}, -2, 2, gen));
  nn::ELU c(0.5, true), d(0.5, true);
  expect_state_roundtrip_ok(c, d, uniform({2, 3}, -2, 2, gen, DType::Float64));
  CHECK(a.str() == "nn.ELU (alpha:1.000000)");
  CHECK(c.str() == "nn.ELU (alpha:0.500000)");
  expect_prints_type(a);
  CHECK_THROWS_WITH_AS(a.forward(zeros({3}, DType::Int64)),
                       "nn.ELU::updateOutput: expected float32 or float64 input, got int64 [3] on cpu", Error);
}

TEST_CASE("ELU: NaN propagates, infinities take their limits, forward and backward (Note [NaN and Inf])") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (bool inplace : {false, true}) {
      INFO(std::string(name(dt)), std::string(inplace ? " in place" : ""));
      nn::ELU m(1.0, inplace);
      const Tensor x = from_vector<double>({kNaN, kInf, -kInf, 1, -1}, {5}).to(dt);
      expect_values("output", m.forward(x.clone()), {kNaN, kInf, -1, 1, std::expm1(-1.0)}, 1e-6);
      expect_values("gradInput", m.backward(x, ones({5}, dt)), {kNaN, 1, 0, 1, std::exp(-1.0)}, 1e-6);
    }
  }
}
