// test_ClippedReLU.cpp
#include <doctest/doctest.h>

#include "nn/ClippedReLU.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

TEST_CASE("ClippedReLU forward and backward by hand") {
  nn::ClippedReLU m(6);
  CHECK(m.ceiling == 6);
  CHECK(m.coef() == 6);
  const Tensor x = from_vector<float>({-1, 0.5f, 5.5f, 6, 7}, {5});
  CHECK(m.forward(x).to_vector<float>() == std::vector<float>{0, 0.5f, 5.5f, 6, 6});
  // flat (zero gradient) below 0 and at or above the ceiling
  const Tensor g = from_vector<float>({1, 2, 3, 4, 5}, {5});
  CHECK(m.backward(x, g).to_vector<float>() == std::vector<float>{0, 2, 3, 0, 0});
  Generator gen(3);
  const Tensor xr = uniform({4, 5, 6}, -3, 9, gen, DType::Float64);
  CHECK(max_abs_diff(m.forward(xr), xr.clamp(0, 6)) == 0);
}

TEST_CASE("ClippedReLU in place") {
  nn::ClippedReLU m(1.5, true);
  Tensor x = from_vector<double>({-1, 1, 2, 1.25}, {2, 2});
  const Tensor y = m.forward(x);
  CHECK(y.is_same_view(x));
  CHECK(x.to_vector<double>() == std::vector<double>{0, 1, 1.5, 1.25});
  Tensor g = from_vector<double>({1, 2, 3, 4}, {2, 2});
  const Tensor gi = m.backward(x, g);
  CHECK(gi.shares_storage(g));
  CHECK(gi.to_vector<double>() == std::vector<double>{0, 2, 0, 4});
}

TEST_CASE("ClippedReLU gradients (random shapes, both ceilings hit, in place and not)") {
  Generator gen(20261202);
  INFO("size seed 20261202");
  for (int trial = 0; trial < 3; ++trial) {
    const Shape s{random_size(gen, 1, 3), random_size(gen, 1, 5), random_size(gen, 1, 4)};
    for (bool inplace : {false, true}) {
      for (double ceiling : {0.5, 2.0}) {
        nn::ClippedReLU m(ceiling, inplace);
        m.to(DType::Float64);
        expect_gradients_ok(m, uniform(s, -1, 2.5, gen, DType::Float64));
        expect_gradients_ok(m, uniform({random_size(gen, 1, 7)}, -1, 2.5, gen, DType::Float64));
      }
    }
  }
}

TEST_CASE("ClippedReLU state round trip, printing and errors") {
  Generator gen(2);
  nn::ClippedReLU a(6), b(6);
  expect_state_roundtrip_ok(a, b, uniform({3, 4}, -2, 8, gen));
  CHECK(a.str() == "nn.ClippedReLU");
  expect_prints_type(a);
  CHECK_THROWS_WITH_AS(nn::ClippedReLU(0), "nn.ClippedReLU: expected a positive finite ceiling, got 0", Error);
  CHECK_THROWS_WITH_AS(nn::ClippedReLU(-1, true), "nn.ClippedReLU: expected a positive finite ceiling, got -1",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2}, DType::Float16)),
                       "nn.ClippedReLU::updateOutput: expected float32 or float64 input, got float16 [2] on cpu",
                       Error);
}

TEST_CASE("ClippedReLU: NaN propagates, infinities take their limits, forward and backward (Note [NaN and Inf])") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (bool inplace : {false, true}) {
      INFO(std::string(name(dt)), std::string(inplace ? " in place" : ""));
      nn::ClippedReLU m(6, inplace);
      const Tensor x = from_vector<double>({kNaN, kInf, -kInf, 1, -1}, {5}).to(dt);
      expect_values("output", m.forward(x.clone()), {kNaN, 6, 0, 1, 0}, 1e-6);
      expect_values("gradInput", m.backward(x, ones({5}, dt)), {0, 0, 0, 1, 0}, 1e-6);
    }
  }
}
