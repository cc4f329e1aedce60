// test_MSECriterion.cpp
#include <doctest/doctest.h>

#include "nn/MSECriterion.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

TEST_CASE("MSECriterion by hand") {
  // differences 1, 0, -2, -0.5: squares sum to 5.25
  const Tensor x = from_vector<double>({1, 2, 3, 4}, {2, 2});
  const Tensor y = from_vector<double>({0, 2, 5, 4.5}, {2, 2});
  nn::MSECriterion mse;
  CHECK(mse.forward(x, y) == doctest::Approx(5.25 / 4).epsilon(1e-15));
  const Tensor g = mse.backward(x, y);
  CHECK(g.sizes() == Shape{2, 2});
  CHECK(g.to_vector<double>() == std::vector<double>{0.5, 0, -1, -0.25});
  nn::MSECriterion sum(false);
  CHECK(sum.forward(x, y) == 5.25);
  CHECK(sum.backward(x, y).to_vector<double>() == std::vector<double>{2, 0, -4, -1});
  CHECK(mse.forward(x.to(DType::Float32), y.to(DType::Float32)) == doctest::Approx(1.3125));
  // a non-contiguous input
  const Tensor xt = from_vector<double>({1, 3, 2, 4}, {2, 2}).t();
  CHECK(mse.forward(xt, y) == doctest::Approx(5.25 / 4).epsilon(1e-15));
}

TEST_CASE("MSECriterion printing and errors") {
  nn::MSECriterion mse;
  CHECK(mse.str() == "nn.MSECriterion");
  CHECK(mse.stateDict().empty());
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2, 2}), zeros({5})),
                       "nn.MSECriterion::updateOutput: expected a target of the input's shape [2 x 2], got [5]", Error);
  // the same element count in another shape pairs the wrong elements: refused too
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2, 3}), zeros({3, 2})),
                       "nn.MSECriterion::updateOutput: expected a target of the input's shape [2 x 3], got [3 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(mse.backward(zeros({4}), zeros({2, 2})),
                       "nn.MSECriterion::updateGradInput: expected a target of the input's shape [4], got [2 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(
      mse.backward(zeros({2, 2}), zeros({4}, DType::Float64)),
      doctest::Contains("nn.MSECriterion::updateGradInput: expected target of input's dtype and device"), Error);
  CHECK_THROWS_WITH_AS(mse.forward(zeros({2}, DType::Int64), zeros({2}, DType::Int64)),
                       "nn.MSECriterion::updateOutput: expected float32 or float64 input, got int64 [2] on cpu", Error);
}

TEST_CASE("MSECriterion: NaN and infinities carry into the loss and the gradient (Note [NaN and Inf])") {
  nn::MSECriterion c;
  const Tensor t = zeros({4}, DType::Float64);
  CHECK(std::isnan(c.forward(from_vector<double>({1, kNaN, 0, 0}, {4}), t)));
  expect_values("gradInput", c.backward(from_vector<double>({1, kNaN, 0, 0}, {4}), t), {0.5, kNaN, 0, 0});
  const Tensor inf = from_vector<double>({1, kInf, -kInf, 0}, {4});
  CHECK(c.forward(inf, t) == kInf);
  expect_values("gradInput", c.backward(inf, t), {0.5, kInf, -kInf, 0});
}
