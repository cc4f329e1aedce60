// test_ClassNLLCriterion.cpp
#include <doctest/doctest.h>

#include "nn/ClassNLLCriterion.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

namespace {
// A table of log-probabilities (any numbers do for the NLL itself), 3 samples x 4 classes.
const std::vector<double> kTable{-1.0, -2.0, -0.5, -3.0,  //
                                 -0.1, -4.0, -2.5, -1.5,  //
                                 -2.2, -0.7, -1.1, -0.3};
}  // namespace

TEST_CASE("ClassNLLCriterion of a known table, with and without weights and averaging") {
  const Tensor x = from_vector<double>(kTable, {3, 4});
  const Tensor t = from_vector<int64_t>({1, 0, 3});  // 0-based classes
  nn::ClassNLLCriterion nll;
  nll.to(DType::Float64);
  CHECK(nll.forward(x, t) == doctest::Approx((2.0 + 0.1 + 0.3) / 3).epsilon(1e-14));
  Tensor g = nll.backward(x, t);
  CHECK(g.sizes() == Shape{3, 4});
  CHECK(g.to_vector<double>() == std::vector<double>{0, -1.0 / 3, 0, 0, -1.0 / 3, 0, 0, 0, 0, 0, 0, -1.0 / 3});
  nll.sizeAverage = false;
  CHECK(nll.forward(x, t) == doctest::Approx(2.4).epsilon(1e-14));
  CHECK(nll.backward(x, t).sum().item() == -3);

  // weights: the sum of -w[t] x[t], divided by the sum of w[t]
  nn::ClassNLLCriterion w(from_vector<double>({0.5, 1, 2, 3}));
  const double num = 1 * 2.0 + 0.5 * 0.1 + 3 * 0.3, den = 1 + 0.5 + 3;
  CHECK(w.forward(x, t) == doctest::Approx(num / den).epsilon(1e-14));
  g = w.backward(x, t);
  CHECK(g.get({0, 1}) == doctest::Approx(-1 / den));
  CHECK(g.get({1, 0}) == doctest::Approx(-0.5 / den));
  CHECK(g.get({2, 3}) == doctest::Approx(-3 / den));
  CHECK(g.abs().sum().item() == doctest::Approx(4.5 / den));
  nn::ClassNLLCriterion wsum(from_vector<double>({0.5, 1, 2, 3}), false);
  CHECK(wsum.forward(x, t) == doctest::Approx(num).epsilon(1e-14));
  CHECK(wsum.backward(x, t).get({2, 3}) == -3);

  // a single sample: a one-element target, scalar or [1]
  nn::ClassNLLCriterion one;
  one.to(DType::Float64);
  CHECK(one.forward(x[2], scalar_tensor(2, DType::Int64)) == doctest::Approx(1.1));
  CHECK(one.forward(x[2], from_vector<int64_t>({2})) == doctest::Approx(1.1));
  CHECK(one.backward(x[2], from_vector<int64_t>({2})).to_vector<double>() == std::vector<double>{0, 0, -1, 0});
  CHECK(w.forward(x[2], scalar_tensor(2)) == doctest::Approx(1.1));  // averaged by its own weight
  CHECK(wsum.forward(x[2], scalar_tensor(2)) == doctest::Approx(2.2));
}

TEST_CASE("ClassNLLCriterion targets of any dtype holding integers; ignoreIndex") {
  const Tensor x = from_vector<double>(kTable, {3, 4});
  nn::ClassNLLCriterion nll;
  nll.to(DType::Float64);
  const double expect = (2.0 + 0.1 + 0.3) / 3;
  for (DType dt : {DType::Float32, DType::Float64, DType::UInt8, DType::Float16}) {
    INFO(name(dt));
    CHECK(nll.forward(x, from_vector<double>({1, 0, 3}).to(dt)) == doctest::Approx(expect).epsilon(1e-14));
  }
  // ignored targets count for nothing, not even in the average
  CHECK(nll.forward(x, from_vector<int64_t>({1, -100, 3})) == doctest::Approx((2.0 + 0.3) / 2));
  CHECK(nll.backward(x, from_vector<int64_t>({1, -100, 3})).get({1, 0}) == 0);
  nn::ClassNLLCriterion ign({}, true, 0);
  ign.to(DType::Float64);
  CHECK(ign.forward(x, from_vector<int64_t>({1, 0, 3})) == doctest::Approx((2.0 + 0.3) / 2));
  // all ignored: loss 0 and zero gradient (Torch divides by the total weight only when > 0)
  CHECK(ign.forward(x, from_vector<int64_t>({0, 0, 0})) == 0);
  CHECK(ign.backward(x, from_vector<int64_t>({0, 0, 0})).abs().sum().item() == 0);
}

TEST_CASE("ClassNLLCriterion state, dtype conversion, printing and errors") {
  nn::ClassNLLCriterion w(from_vector<float>({1, 2, 3}));
  CHECK(w.str() == "nn.ClassNLLCriterion");
  CHECK(w.stateDict().count("weights"));
  w.to(DType::Float64);
  CHECK(w.weights.dtype() == DType::Float64);
  CHECK(w.stateDict().at("weights").dtype() == DType::Float64);
  const Tensor x = zeros({2, 3}, DType::Float64);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<int64_t>({1, 3})),
                       "nn.ClassNLLCriterion::updateOutput: expected target class indices in [0, 2] (0-based) or "
                       "ignoreIndex -100, got 3 at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, from_vector<int64_t>({-1, 0})),
                       "nn.ClassNLLCriterion::updateOutput: expected target class indices in [0, 2] (0-based) or "
                       "ignoreIndex -100, got -1 at target[0]",
                       Error);
  CHECK_THROWS_WITH_AS(w.backward(x, from_vector<float>({0, 1.5f})),
                       "nn.ClassNLLCriterion::updateGradInput: expected integer class indices in the target, got 1.5 "
                       "at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(x, zeros({2, 1})),
                       "nn.ClassNLLCriterion::updateOutput: expected a target of [2] for input [2 x 3], got [2 x 1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({3}, DType::Float64), zeros({2})),
                       "nn.ClassNLLCriterion::updateOutput: expected a one-element target for input [3], got [2]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 3, 1}, DType::Float64), zeros({2})),
                       "nn.ClassNLLCriterion::updateOutput: expected input of [classes] or [batch x classes], got "
                       "[2 x 3 x 1]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 4}, DType::Float64), zeros({2})),
                       "nn.ClassNLLCriterion::updateOutput: expected weights of [4] for 4 classes (input [2 x 4]), "
                       "got [3]",
                       Error);
  CHECK_THROWS_WITH_AS(w.forward(zeros({2, 3}), zeros({2})),
                       doctest::Contains("expected input of weights's dtype and device (float64 on cpu), got float32"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::ClassNLLCriterion(zeros({2, 2})),
                       "nn.ClassNLLCriterion: expected 1-d class weights, got [2 x 2]", Error);
  CHECK_THROWS_WITH_AS(nn::ClassNLLCriterion(zeros({2}, DType::Int64)),
                       "nn.ClassNLLCriterion: expected float32 or float64 weights, got int64 [2] on cpu", Error);
}

TEST_CASE("ClassNLLCriterion: reads the input at the target only: a NaN elsewhere is ignored (Note [NaN and Inf])") {
  nn::ClassNLLCriterion c;
  const Tensor t = from_vector<int64_t>({0, 2}, {2});
  const Tensor off = from_vector<double>({-1, kNaN, kInf, -kInf, -2, -3}, {2, 3});
  CHECK(c.forward(off, t) == doctest::Approx(2));
  expect_values("gradInput", c.backward(off, t), {-0.5, 0, 0, 0, 0, -0.5});
  CHECK(std::isnan(c.forward(from_vector<double>({kNaN, 0, 0, 0, 0, -3}, {2, 3}), t)));
  CHECK(c.forward(from_vector<double>({-kInf, 0, 0, 0, 0, -3}, {2, 3}), t) == kInf);
}
