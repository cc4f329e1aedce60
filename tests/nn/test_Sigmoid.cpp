// test_Sigmoid.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/Sigmoid.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Sigmoid closed forms: sigmoid(ln 3) = 3/4, derivative 3/16") {
  nn::Sigmoid m;
  const double l3 = std::log(3.0);
  const Tensor x = from_vector<double>({-l3, 0, l3, 1000, -1000}, {5});
  const Tensor y = m.forward(x);
  const std::vector<double> want{0.25, 0.5, 0.75, 1, 0};
  for (int i = 0; i < 5; ++i) CHECK(y.to_vector<double>()[i] == doctest::Approx(want[i]).epsilon(1e-14));
  const Tensor gi = m.backward(x, from_vector<double>({1, 2, 3, 4, 5}, {5}));
  const std::vector<double> dwant{3.0 / 16, 2 * 0.25, 3 * 3.0 / 16, 0, 0};
  for (int i = 0; i < 5; ++i) CHECK(gi.to_vector<double>()[i] == doctest::Approx(dwant[i]).epsilon(1e-14));
  CHECK_FALSE(has_nonfinite(gi));
  Generator gen(8);
  const Tensor xr = uniform({3, 7}, -6, 6, gen, DType::Float32);
  CHECK(max_abs_diff(m.forward(xr), xr.to(DType::Float64).sigmoid()) < 1e-6);
  CHECK_FALSE(has_nonfinite(m.forward(full({4}, -1000.0, DType::Float32))));
}

TEST_CASE("Sigmoid float32 is accurate over its whole range (vectorised exp underneath)") {
  const Tensor x = arange(-110, 110, 0.0173, DType::Float32);
  nn::Sigmoid m;
  const Tensor y = m.forward(x).to(DType::Float64);
  const Tensor want = x.to(DType::Float64).sigmoid();
  CHECK(max_abs_diff(y, want) < 2e-7);
  // relative error in the left tail, where values are tiny but still normal floats
  const Tensor tail = y.narrow(0, 1400, 4000), tail_want = want.narrow(0, 1400, 4000);  // x in [-85.8, -16.6]
  CHECK(max_abs_diff(tail.div(tail_want), ones(tail.sizes(), DType::Float64)) < 1e-6);
  const Tensor special = from_vector<float>({INFINITY, -INFINITY, NAN, -200}, {4});
  const std::vector<float> got = m.forward(special).to_vector<float>();
  CHECK(got[0] == 1);
  CHECK(got[1] == 0);
  CHECK(std::isnan(got[2]));
  CHECK(got[3] == 0);
}

TEST_CASE("Sigmoid gradients (random shapes, 1D to 4D)") {
  Generator gen(20261204);
  INFO("size seed 20261204");
  for (int trial = 0; trial < 3; ++trial) {
    const Shape shapes[] = {{random_size(gen, 1, 9)},
                            {random_size(gen, 1, 4), random_size(gen, 1, 6)},
                            {random_size(gen, 1, 3), random_size(gen, 1, 3), random_size(gen, 1, 4), 2}};
    for (const Shape& s : shapes) {
      nn::Sigmoid m;
      m.to(DType::Float64);
      expect_gradients_ok(m, uniform(s, -3, 3, gen, DType::Float64));
    }
  }
}

TEST_CASE("Sigmoid state round trip, printing and errors") {
  Generator gen(2);
  nn::Sigmoid a, b;
  expect_state_roundtrip_ok(a, b, uniform({2, 3}, -2, 2, gen));
  CHECK(a.str() == "nn.Sigmoid");
  expect_prints_type(a);
  CHECK_THROWS_WITH_AS(a.forward(zeros({3}, DType::Int64)),
                       "nn.Sigmoid::updateOutput: expected float32 or float64 input, got int64 [3] on cpu", Error);
}

TEST_CASE("Sigmoid: NaN propagates, infinities take their limits, forward and backward (Note [NaN and Inf])") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (bool inplace : {false, true}) {
      INFO(std::string(name(dt)), std::string(inplace ? " in place" : ""));
      nn::Sigmoid m;
      m.inplace = inplace;
      const Tensor x = from_vector<double>({kNaN, kInf, -kInf, 1, -1}, {5}).to(dt);
      expect_values("output", m.forward(x.clone()), {kNaN, 1, 0, 1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(1.0))},
                    1e-6);
      expect_values("gradInput", m.backward(x, ones({5}, dt)),
                    {kNaN, 0, 0, std::exp(-1.0) / ((1 + std::exp(-1.0)) * (1 + std::exp(-1.0))),
                     std::exp(-1.0) / ((1 + std::exp(-1.0)) * (1 + std::exp(-1.0)))},
                    1e-6);
    }
  }
}
