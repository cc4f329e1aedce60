// test_NewCriteria.cpp: the elementwise criteria (BCE, BCEWithLogits, SmoothL1, Abs, DistKLDiv,
// HingeEmbedding, MultiLabelSoftMargin): loss and gradInput against PyTorch (float64, every
// option: sizeAverage, weights, posWeight, beta, margin, logTarget, batchMean; probabilities of
// exactly 0 and 1; large logits), central differences over several shapes and options, float32
// against float64, errors naming the criterion and the shapes, printing and state. The
// bad-input matrix and the shared gradient table cover them too (tests/support/CriterionTable.h).
#include <doctest/doctest.h>

#include <cmath>

#include "tests/support/ErrorText.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NewCriteria.h"

using namespace tensor;
using namespace testing;

TEST_CASE("elementwise criteria: loss and gradInput match PyTorch's for every option") {
  int checked = 0;
  for (const ReferenceCriterionCase& c : reference_criterion_cases()) {
    if (c.type == "CTCCriterion") continue;
    INFO(c.name);
    nn::CriterionPtr m = make_elementwise_criterion(c.type, c.config, c.weights, c.posWeight);
    REQUIRE(m);
    CHECK(m->forward(c.input, c.target) == doctest::Approx(c.loss).epsilon(1e-12));
    CHECK(max_abs_diff(m->backward(c.input, c.target), c.gradInput) < 1e-12);
    ++checked;
  }
  CHECK(checked >= 60);
}

TEST_CASE("elementwise criteria: gradients by central differences (options, weights, odd shapes)") {
  Generator gen(4711);
  struct Row {
    std::string type;
    std::vector<double> cfg;
    double lo, hi, tlo, thi;
    bool weights = false, posWeight = false;
  };
  const std::vector<Row> rows = {
      {"BCECriterion", {1, 1, 1, 0, 0}, 0.05, 0.95, 0, 1, true},
      {"BCECriterion", {0, 1, 1, 0, 0}, 0.05, 0.95, 0, 1},
      {"BCEWithLogitsCriterion", {1, 1, 1, 0, 0}, -4, 4, 0, 1, true, true},
      {"BCEWithLogitsCriterion", {0, 1, 1, 0, 0}, -4, 4, 0, 1},
      {"SmoothL1Criterion", {1, 0.5, 1, 0, 0}, -2, 2, -2, 2},
      {"SmoothL1Criterion", {0, 2, 1, 0, 0}, -2, 2, -2, 2},
      {"AbsCriterion", {1, 1, 1, 0, 0}, -2, 2, -2, 2},
      {"DistKLDivCriterion", {1, 1, 1, 0, 0}, -3, 0, 0.01, 1},
      {"DistKLDivCriterion", {1, 1, 1, 1, 1}, -3, 0, -3, 0},
      {"DistKLDivCriterion", {0, 1, 1, 0, 0}, -3, 0, 0.01, 1},
      {"HingeEmbeddingCriterion", {1, 1, 1.5, 0, 0}, -1, 1, -1, 1},
      {"MultiLabelSoftMarginCriterion", {1, 1, 1, 0, 0}, -3, 3, 0, 1, true},
      {"MultiLabelSoftMarginCriterion", {0, 1, 1, 0, 0}, -3, 3, 0, 1},
  };
  for (const Row& r : rows) {
    for (const Shape& s : {Shape{4, 5}, Shape{7}, Shape{2, 3, 4}}) {
      INFO(r.type, " ", shape_str(s), " sizeAverage ", r.cfg[0]);
      const Tensor w = r.weights ? uniform({s.back()}, 0.5, 1.5, gen, DType::Float64) : Tensor();
      const Tensor pw = r.posWeight ? uniform({s.back()}, 0.2, 2, gen, DType::Float64) : Tensor();
      nn::CriterionPtr m = make_elementwise_criterion(r.type, r.cfg, w, pw);
      Tensor t = uniform(s, r.tlo, r.thi, gen, DType::Float64);
      if (r.type == "HingeEmbeddingCriterion") t = t.sign();
      expect_criterion_gradient_ok(*m, uniform(s, r.lo, r.hi, gen, DType::Float64), t);
    }
  }
}

TEST_CASE("elementwise criteria: float32 gives float64's loss and gradient (rounded)") {
  for (const ReferenceCriterionCase& c : reference_criterion_cases()) {
    if (c.type == "CTCCriterion") continue;
    INFO(c.name);
    nn::CriterionPtr m =
        make_elementwise_criterion(c.type, c.config, c.weights.defined() ? c.weights.to(DType::Float32) : Tensor(),
                                   c.posWeight.defined() ? c.posWeight.to(DType::Float32) : Tensor());
    const Tensor x = c.input.to(DType::Float32), t = c.target.to(DType::Float32);
    CHECK(m->forward(x, t) == doctest::Approx(c.loss).epsilon(1e-5));
    const Tensor g = m->backward(x, t);
    CHECK(g.dtype() == DType::Float32);
    CHECK(max_abs_diff(g.to(DType::Float64), c.gradInput) < 1e-4 * (1 + c.gradInput.abs().max().item()));
  }
}

TEST_CASE("elementwise criteria: closed forms") {
  // BCE at exactly 0 and 1: each log clamped at -100
  nn::BCECriterion bce(Tensor(), false);
  CHECK(bce.forward(from_vector<double>({0, 1}), from_vector<double>({1, 0})) == doctest::Approx(200));
  // SmoothL1 with beta 0 is the L1 loss
  nn::SmoothL1Criterion l1(false, 0.0);
  nn::AbsCriterion abs(false);
  const Tensor x = from_vector<double>({1, -2, 0.25}), y = from_vector<double>({0, 1, 0.25});
  CHECK(l1.forward(x, y) == doctest::Approx(4));
  CHECK(abs.forward(x, y) == doctest::Approx(4));
  CHECK(abs.backward(x, y).to_vector<double>() == std::vector<double>{1, -1, 0});
  // Hinge: x where y = 1, max(0, margin - x) where y = -1
  nn::HingeEmbeddingCriterion hinge(1.0, false);
  CHECK(hinge.forward(from_vector<double>({0.3, 0.3, 2}), from_vector<double>({1, -1, -1})) ==
        doctest::Approx(0.3 + 0.7 + 0));
  // KL: a zero target contributes nothing (0 log 0 = 0), as in PyTorch's xlogy
  nn::DistKLDivCriterion kl(false);
  CHECK(kl.forward(from_vector<double>({-5, std::log(0.5)}), from_vector<double>({0, 1})) ==
        doctest::Approx(-std::log(0.5)));
  // batchMean divides by the batch size
  nn::DistKLDivCriterion klb(true, false, true);
  const Tensor lx = full({2, 3}, std::log(1.0 / 3), DType::Float64), ty = full({2, 3}, 0.5, DType::Float64);
  nn::DistKLDivCriterion kls(false);
  CHECK(klb.forward(lx, ty) == doctest::Approx(kls.forward(lx, ty) / 2));
}

TEST_CASE("elementwise criteria: errors name the criterion and the shapes") {
  nn::BCECriterion bce(from_vector<double>({1, 2, 3}));
  CHECK_THROWS_WITH_AS(bce.forward(zeros({2, 4}, DType::Float64), zeros({2, 4}, DType::Float64)),
                       "nn.BCECriterion::updateOutput: expected weights of a shape that ends the input's [2 x 4], "
                       "got [3]",
                       Error);
  nn::BCEWithLogitsCriterion bcel(Tensor(), true, from_vector<double>({1, 2}));
  CHECK_THROWS_WITH_AS(bcel.backward(zeros({2, 3}, DType::Float64), zeros({2, 3}, DType::Float64)),
                       "nn.BCEWithLogitsCriterion::updateGradInput: expected posWeight of a shape that ends the "
                       "input's [2 x 3], got [2]",
                       Error);
  nn::SmoothL1Criterion sl(true, -1);
  CHECK_THROWS_WITH_AS(sl.forward(zeros({2}, DType::Float64), zeros({2}, DType::Float64)),
                       doctest::Contains("nn.SmoothL1Criterion::updateOutput: expected beta >= 0, got -1"), Error);
  nn::AbsCriterion a;
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3}, DType::Float64), zeros({3, 2}, DType::Float64)),
                       "nn.AbsCriterion::updateOutput: expected a target of the input's shape [2 x 3], got [3 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3}, DType::Float64), zeros({2, 3}, DType::Float32)),
                       doctest::Contains("nn.AbsCriterion::updateOutput"), Error);
  CHECK_THROWS_WITH_AS(nn::BCECriterion(zeros({3}, DType::Int64)), doctest::Contains("nn.BCECriterion"), Error);
}

TEST_CASE("elementwise criteria: printing, weights in the state, to(dtype)") {
  nn::MultiLabelSoftMarginCriterion m(from_vector<double>({1, 2}));
  CHECK(m.str() == "nn.MultiLabelSoftMarginCriterion");
  CHECK(m.stateDict().count("weights") == 1);
  nn::BCEWithLogitsCriterion b(Tensor(), true, from_vector<double>({1, 2}));
  CHECK(b.stateDict().count("pos_weight") == 1);
  b.to(DType::Float32);
  CHECK(b.posWeight.dtype() == DType::Float32);
  CHECK(std::isfinite(b.forward(zeros({3, 2}), zeros({3, 2}))));
  CHECK(nn::SmoothL1Criterion().str() == "nn.SmoothL1Criterion");
}
