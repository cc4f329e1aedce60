// test_Tanh.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/Tanh.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Tanh closed forms: tanh(ln 2) = 3/5, derivative 16/25") {
  nn::Tanh m;
  const double l2 = std::log(2.0);
  const Tensor x = from_vector<double>({-l2, 0, l2, 1000, -1000}, {5});
  const Tensor y = m.forward(x);
  const std::vector<double> want{-0.6, 0, 0.6, 1, -1};
  for (int i = 0; i < 5; ++i) CHECK(y.to_vector<double>()[i] == doctest::Approx(want[i]).epsilon(1e-14));
  const Tensor gi = m.backward(x, ones({5}, DType::Float64));
  const std::vector<double> dwant{0.64, 1, 0.64, 0, 0};
  for (int i = 0; i < 5; ++i) CHECK(gi.to_vector<double>()[i] == doctest::Approx(dwant[i]).epsilon(1e-14));
  CHECK_FALSE(has_nonfinite(gi));
  CHECK_FALSE(m.inplace);
  CHECK_FALSE(m.output.shares_storage(x));
  // float32 agrees
  Generator gen(8);
  const Tensor xr = uniform({3, 7}, -4, 4, gen, DType::Float32);
  CHECK(max_abs_diff(m.forward(xr), xr.to(DType::Float64).tanh()) < 1e-6);
}

TEST_CASE("Tanh float32 is accurate over its whole range (vectorised exp underneath)") {
  // a sweep through the polynomial (|x| < 0.625) and exponential branches, and saturation
  const Tensor x = arange(-30, 30, 0.00731, DType::Float32);
  nn::Tanh m;
  const Tensor y = m.forward(x).to(DType::Float64);
  const Tensor want = x.to(DType::Float64).tanh();
  CHECK(max_abs_diff(y, want) < 2e-7);
  CHECK(max_abs_diff(y.div(want), ones(want.sizes(), DType::Float64)) < 5e-7);  // relative, tiny x included
  const Tensor special = from_vector<float>({INFINITY, -INFINITY, NAN, 1e-30f}, {4});
  const std::vector<float> got = m.forward(special).to_vector<float>();
  CHECK(got[0] == 1);
  CHECK(got[1] == -1);
  CHECK(std::isnan(got[2]));
  CHECK(got[3] == 1e-30f);
}

TEST_CASE("Tanh gradients (random shapes, 1D to 4D)") {
  Generator gen(20261203);
  INFO("size seed 20261203");
  for (int trial = 0; trial < 3; ++trial) {
    const Shape shapes[] = {{random_size(gen, 1, 9)},
                            {random_size(gen, 1, 4), random_size(gen, 1, 6)},
                            {random_size(gen, 1, 3), random_size(gen, 1, 3), random_size(gen, 1, 4), 2}};
    for (const Shape& s : shapes) {
      nn::Tanh m;
      m.to(DType::Float64);
      expect_gradients_ok(m, uniform(s, -2, 2, gen, DType::Float64));
    }
  }
}

TEST_CASE("Tanh state round trip, printing and errors") {
  Generator gen(2);
  nn::Tanh a, b;
  expect_state_roundtrip_ok(a, b, uniform({2, 3, 4}, -2, 2, gen));
  CHECK(a.str() == "nn.Tanh");
  expect_prints_type(a);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2}, DType::UInt8)),
                       "nn.Tanh::updateOutput: expected float32 or float64 input, got uint8 [2] on cpu", Error);
  a.forward(zeros({2, 2}));
  CHECK_THROWS_WITH_AS(a.backward(zeros({2, 2}), zeros({2, 2}, DType::Float64)),
                       "nn.Tanh::updateGradInput: expected gradOutput of the output's shape and dtype (float32 [2 x 2] "
                       "on cpu), got float64 [2 x 2] on cpu",
                       Error);
}

TEST_CASE("Tanh: NaN propagates, infinities take their limits, forward and backward (Note [NaN and Inf])") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (bool inplace : {false, true}) {
      INFO(std::string(name(dt)), std::string(inplace ? " in place" : ""));
      nn::Tanh m;
      m.inplace = inplace;
      const Tensor x = from_vector<double>({kNaN, kInf, -kInf, 1, -1}, {5}).to(dt);
      expect_values("output", m.forward(x.clone()), {kNaN, 1, -1, std::tanh(1.0), -std::tanh(1.0)}, 1e-6);
      expect_values("gradInput", m.backward(x, ones({5}, dt)),
                    {kNaN, 0, 0, 1 - std::tanh(1.0) * std::tanh(1.0), 1 - std::tanh(1.0) * std::tanh(1.0)}, 1e-6);
    }
  }
}
