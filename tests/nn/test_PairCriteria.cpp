// test_PairCriteria.cpp: MarginRankingCriterion and CosineEmbeddingCriterion (tables {x1, x2}):
// closed forms, PyTorch's values (computed with torch 2.15 in float64 and written here),
// finite-difference gradients through the table interface, and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "nn/CosineEmbeddingCriterion.h"
#include "nn/MarginRankingCriterion.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;
using nn::Table;

namespace {
// central differences of criterion.forward({x1, x2}, y) in each entry of x1 and x2
void expect_pair_gradient_ok(nn::Criterion& c, const Tensor& x1, const Tensor& x2, const Tensor& y) {
  Tensor a = x1.clone(), b = x2.clone();
  c.forward(Table{a, b}, y);
  const nn::Value g = c.backward(Table{a, b}, y);
  for (int which = 0; which < 2; ++which) {
    Tensor t = which == 0 ? a : b;
    const Tensor analytic = g[static_cast<size_t>(which)].tensor("");
    Tensor flat = t.view({-1});
    const Tensor an = analytic.reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double v = flat.get({i});
      const double h = 1e-6;
      flat.narrow(0, i, 1).fill_(v + h);
      const double up = c.forward(Table{a, b}, y);
      flat.narrow(0, i, 1).fill_(v - h);
      const double down = c.forward(Table{a, b}, y);
      flat.narrow(0, i, 1).fill_(v);
      CAPTURE(which);
      CAPTURE(i);
      CHECK(an.get({i}) == doctest::Approx((up - down) / (2 * h)).epsilon(1e-6).scale(1));
    }
  }
}
}  // namespace

TEST_CASE("MarginRankingCriterion: closed form, PyTorch's value, gradients, errors") {
  const Tensor x1 = from_vector<double>({0.5, -1.0, 2.0, 0.25}, {4});
  const Tensor x2 = from_vector<double>({1.0, 0.0, 0.5, 0.75}, {4});
  const Tensor y = from_vector<double>({1, -1, -1, 1}, {4});
  nn::MarginRankingCriterion c(0.3);
  // torch.nn.functional.margin_ranking_loss(x1, x2, y, margin=0.3): 0.85 (sum: 3.4); entry 1's hinge is inactive
  CHECK(c.forward(Table{x1, x2}, y) == doctest::Approx(0.85).epsilon(1e-14));
  nn::MarginRankingCriterion sum(0.3, false);
  CHECK(sum.forward(Table{x1, x2}, y) == doctest::Approx(3.4).epsilon(1e-14));
  const nn::Value& g = c.backward(Table{x1, x2}, y);
  expect_values("dx1", g[0].tensor(""), {-0.25, 0, 0.25, -0.25}, 1e-15);
  Generator gen(11);
  expect_pair_gradient_ok(c, uniform({6}, -1, 1, gen, DType::Float64), uniform({6}, -1, 1, gen, DType::Float64),
                          from_vector<double>({1, -1, 1, 1, -1, -1}, {6}));
  CHECK_THROWS_WITH_AS(c.forward(x1, y),
                       "nn.MarginRankingCriterion::updateOutput: takes a table {x1, x2}: call forward(nn::Table{x1, "
                       "x2}, target)",
                       Error);
  CHECK_THROWS_WITH_AS(
      c.forward(Table{x1, x2}, from_vector<double>({1, 0, 1, 1}, {4})),
      "nn.MarginRankingCriterion::updateOutput: expected a target of 1 and -1 only, got float64 [4] on cpu", Error);
  CHECK_THROWS_WITH_AS(c.forward(Table{x1, x2.narrow(0, 0, 3)}, y),
                       doctest::Contains("expected x1 and x2 of one shape"), Error);
  CHECK_THROWS_WITH_AS(c.forward(Table{x1, x2}, y.narrow(0, 0, 3)), doctest::Contains("expected a target of 4 entries"),
                       Error);
}

TEST_CASE("CosineEmbeddingCriterion: PyTorch's value, both branches, gradients, errors") {
  const Tensor x1 = from_vector<double>({1, 2, 3, -1, 0.5, 2}, {2, 3});
  const Tensor x2 = from_vector<double>({2, 1, 0, 1, 1, 1}, {2, 3});
  const Tensor y = from_vector<double>({1, -1}, {2});
  nn::CosineEmbeddingCriterion c(0.1);
  // torch.nn.functional.cosine_embedding_loss(x1, x2, y, margin=0.1)
  // = 0.3999365146377178 (cos = [4 / sqrt(14 * 5), 1.5 / sqrt(5.25 * 3)])
  CHECK(c.forward(Table{x1, x2}, y) == doctest::Approx(0.3999365146377178).epsilon(1e-14));
  Generator gen(12);
  expect_pair_gradient_ok(c, uniform({4, 3}, -1, 1, gen, DType::Float64), uniform({4, 3}, -1, 1, gen, DType::Float64),
                          from_vector<double>({1, -1, -1, 1}, {4}));
  nn::CosineEmbeddingCriterion big(0.9, false);  // the y = -1 hinge inactive
  expect_pair_gradient_ok(big, uniform({3}, -1, 1, gen, DType::Float64), uniform({3}, -1, 1, gen, DType::Float64),
                          from_vector<double>({-1}, {1}));
  CHECK_THROWS_WITH_AS(c.forward(Table{x1}, y),
                       "nn.CosineEmbeddingCriterion::updateOutput: expected a table {x1, x2}, got table {float64 [2 x "
                       "3] on cpu}",
                       Error);
}
