// test_CrossEntropyCriterion.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/ClassNLLCriterion.h"
#include "nn/CrossEntropyCriterion.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

namespace {
// log_softmax of each row, written out naively
std::vector<double> naive_log_softmax(const std::vector<double>& x, int64_t rows, int64_t cols) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] - std::log(s);
  }
  return y;
}
}  // namespace

TEST_CASE("CrossEntropyCriterion = LogSoftMax + ClassNLL, by hand") {
  const std::vector<double> scores{1, 2, 3, 0.5, -1, 0};
  const std::vector<double> lsm = naive_log_softmax(scores, 2, 3);
  const Tensor x = from_vector<double>(scores, {2, 3});
  const Tensor t = from_vector<int64_t>({2, 0});
  nn::CrossEntropyCriterion ce;
  CHECK(ce.forward(x, t) == doctest::Approx(-(lsm[2] + lsm[3]) / 2).epsilon(1e-14));
  // gradient: (softmax - onehot) / batch
  const std::vector<double> g = ce.backward(x, t).to_vector<double>();
  for (int64_t k = 0; k < 6; ++k) {
    const double onehot = (k == 2 || k == 3) ? 1 : 0;
    CHECK(g[k] == doctest::Approx((std::exp(lsm[k]) - onehot) / 2).epsilon(1e-14));
  }
  // weighted and summed
  nn::CrossEntropyCriterion w(from_vector<double>({2, 1, 0.5}), false);
  CHECK(w.forward(x, t) == doctest::Approx(-(0.5 * lsm[2] + 2 * lsm[3])).epsilon(1e-14));
  nn::CrossEntropyCriterion wa(from_vector<double>({2, 1, 0.5}));
  CHECK(wa.forward(x, t) == doctest::Approx(-(0.5 * lsm[2] + 2 * lsm[3]) / 2.5).epsilon(1e-14));
  // the same as ClassNLL on log-probabilities
  nn::ClassNLLCriterion nll(from_vector<double>({2, 1, 0.5}));
  CHECK(nll.forward(from_vector<double>(lsm, {2, 3}), t) == doctest::Approx(wa.forward(x, t)).epsilon(1e-14));
  // one sample
  CHECK(ce.forward(x[1], scalar_tensor(0, DType::Int64)) == doctest::Approx(-lsm[3]).epsilon(1e-14));
  CHECK(ce.forward(x[1].to(DType::Float32), from_vector<float>({0})) == doctest::Approx(-lsm[3]).epsilon(1e-6));
  CHECK(ce.logProbs.to_vector<float>()[2] == doctest::Approx(lsm[5]).epsilon(1e-6));
}

TEST_CASE("CrossEntropyCriterion is stable for large scores and honours ignoreIndex") {
  const Tensor x = from_vector<double>({1000, 0, -1000, -1000, 1000, 999}, {2, 3});
  nn::CrossEntropyCriterion ce({}, false);
  CHECK(ce.forward(x, from_vector<int64_t>({0, 1})) == doctest::Approx(std::log1p(std::exp(-1.0))).epsilon(1e-12));
  CHECK(ce.forward(x, from_vector<int64_t>({1, 2})) == doctest::Approx(1000 + 1 + std::log1p(std::exp(-1.0))));
  CHECK_FALSE(has_nonfinite(ce.backward(x, from_vector<int64_t>({1, 2}))));
  CHECK(ce.forward(x.to(DType::Float32), from_vector<int64_t>({2, 0})) ==
        doctest::Approx(4000 + std::log1p(std::exp(-1.0))).epsilon(1e-6));
  nn::CrossEntropyCriterion ign({}, true, 1);
  CHECK(ign.forward(x, from_vector<int64_t>({1, 2})) == doctest::Approx(1 + std::log1p(std::exp(-1.0))));
  const Tensor g = ign.backward(x, from_vector<int64_t>({1, 2}));
  CHECK(g[0].abs().sum().item() == 0);
}

TEST_CASE("CrossEntropyCriterion state, printing and errors") {
  nn::CrossEntropyCriterion ce(from_vector<float>({1, 1}));
  CHECK(ce.str() == "nn.CrossEntropyCriterion");
  CHECK(ce.stateDict().at("weights").numel() == 2);
  CHECK_THROWS_WITH_AS(ce.forward(zeros({3, 2}), from_vector<double>({0, 1, 2})),
                       "nn.CrossEntropyCriterion::updateOutput: expected target class indices in [0, 1] (0-based) or "
                       "ignoreIndex -100, got 2 at target[2]",
                       Error);
  CHECK_THROWS_WITH_AS(ce.forward(zeros({3, 2}), from_vector<double>({0, NAN, 1})),
                       "nn.CrossEntropyCriterion::updateOutput: expected integer class indices in the target, got nan "
                       "at target[1]",
                       Error);
  CHECK_THROWS_WITH_AS(ce.backward(zeros({3, 2}), zeros({2})),
                       "nn.CrossEntropyCriterion::updateGradInput: expected a target of [3] for input [3 x 2], got [2]",
                       Error);
  CHECK_THROWS_WITH_AS(
      ce.forward(zeros({3, 2}, DType::Int64), zeros({3})),
      "nn.CrossEntropyCriterion::updateOutput: expected float32 or float64 input, got int64 [3 x 2] on "
      "cpu",
      Error);
}

TEST_CASE(
    "CrossEntropyCriterion: a NaN or +Inf in a row makes the loss and that row's gradient NaN (Note [NaN and Inf])") {
  nn::CrossEntropyCriterion c;
  const Tensor t = from_vector<int64_t>({0, 2}, {2});
  const Tensor x = from_vector<double>({1, kNaN, 2, 0, 1, 2}, {2, 3});
  CHECK(std::isnan(c.forward(x, t)));
  const std::vector<double> g = c.backward(x, t).to_vector<double>();
  for (int i : {0, 1, 2}) CHECK(std::isnan(g[i]));
  for (int i : {3, 4, 5}) CHECK(std::isfinite(g[i]));
  // -Inf off target: a finite loss
  CHECK(std::isfinite(c.forward(from_vector<double>({1, -kInf, 2, 0, 1, 2}, {2, 3}), t)));
}
