// test_CTCCriterion.cpp: nn.CTCCriterion against PyTorch's F.ctc_loss (float64; blanks 0, 3 and
// C-1; padded and concatenated targets; short input and target lengths, a zero target length;
// repeated labels; an impossible alignment with and without zeroInfinity; every reduction), the
// gradient by central differences through a log-softmax (Note [CTC's gradient]), the plain
// two-argument interface with and without lengths, float32, and the errors: shapes, dtypes,
// lengths, labels and blank out of range.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/support/ErrorText.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NewCriteria.h"

using namespace tensor;
using namespace testing;

namespace {
bool same_or_both_nan(const Tensor& a, const Tensor& b, double tol) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return false;
    if (std::isinf(x[i]) || std::isinf(y[i])) {
      if (x[i] != y[i]) return false;
    } else if (!std::isnan(x[i]) && std::fabs(x[i] - y[i]) > tol) {
      return false;
    }
  }
  return true;
}
}  // namespace

TEST_CASE("nn.CTCCriterion: losses and gradients match PyTorch's ctc_loss") {
  int checked = 0;
  for (const ReferenceCriterionCase& c : reference_criterion_cases()) {
    if (c.type != "CTCCriterion") continue;
    INFO(c.name);
    auto ctc = make_ctc_criterion(c.config);
    const double loss = ctc->forward(c.input, c.target, c.inputLengths, c.targetLengths);
    if (std::isinf(c.loss)) {
      CHECK(loss == c.loss);
    } else {
      CHECK(loss == doctest::Approx(c.loss).epsilon(1e-11));
    }
    CHECK(same_or_both_nan(ctc->losses, c.losses, 1e-10));
    CHECK(same_or_both_nan(ctc->backward(c.input, c.target, c.inputLengths, c.targetLengths), c.gradInput, 1e-11));
    ++checked;
  }
  CHECK(checked >= 10);
}

TEST_CASE("nn.CTCCriterion: gradients by central differences through a log-softmax") {
  Generator gen(9001);
  using R = nn::CTCCriterion::Reduction;
  struct Case {
    int64_t T, N, C, blank;
    std::vector<int64_t> il, tl;
    bool padded;
    R r;
  };
  const std::vector<Case> cases = {
      {6, 2, 4, 0, {6, 5}, {2, 3}, true, R::Mean},
      {7, 3, 5, 2, {7, 7, 4}, {3, 0, 2}, false, R::Sum},
      {5, 1, 3, 2, {5}, {2}, true, R::None},
      {8, 2, 6, 5, {8, 6}, {4, 1}, true, R::Mean},
  };
  for (const Case& k : cases) {
    INFO("T ", k.T, " N ", k.N, " C ", k.C, " blank ", k.blank);
    int64_t S = 0, total = 0;
    for (int64_t l : k.tl) S = std::max(S, l), total += l;
    std::vector<int64_t> labels;
    for (int64_t b = 0; b < k.N; ++b) {
      for (int64_t i = 0; i < (k.padded ? S : k.tl[b]); ++i) {
        int64_t v = static_cast<int64_t>(gen.randint(k.C - 1));
        labels.push_back(v >= k.blank ? v + 1 : v);
      }
    }
    const Tensor targets = k.padded ? from_vector<int64_t>(labels, {k.N, S}) : from_vector<int64_t>(labels, {total});
    auto ctc = std::make_shared<nn::CTCCriterion>(k.blank, k.r);
    ctc->setLengths(from_vector<int64_t>(k.il), from_vector<int64_t>(k.tl));
    LogSoftMaxCTC wrapped(ctc);
    expect_criterion_gradient_ok(wrapped, uniform({k.T, k.N, k.C}, -2, 2, gen, DType::Float64), targets);
  }
}

TEST_CASE("nn.CTCCriterion: the plain interface uses full lengths, float32 gives float64's values") {
  Generator gen(9002);
  const Tensor lp = log_softmax_last(uniform({6, 2, 4}, -2, 2, gen, DType::Float64));
  const Tensor targets = from_vector<int64_t>({1, 2, 3, 3, 1, 2}, {2, 3});
  nn::CTCCriterion a, b;
  const double full = a.forward(lp, targets);
  CHECK(full == doctest::Approx(b.forward(lp, targets, from_vector<int64_t>({6, 6}), from_vector<int64_t>({3, 3}))));
  CHECK(max_abs_diff(a.backward(lp, targets), b.backward(lp, targets)) == 0);
  nn::CTCCriterion f;
  CHECK(f.forward(lp.to(DType::Float32), targets) == doctest::Approx(full).epsilon(1e-5));
  CHECK(f.backward(lp.to(DType::Float32), targets).dtype() == DType::Float32);
  CHECK(a.str() == "nn.CTCCriterion(blank=0, reduction=mean)");
  CHECK(nn::CTCCriterion(3, nn::CTCCriterion::Reduction::Sum, true).str() ==
        "nn.CTCCriterion(blank=3, reduction=sum, zero_infinity=true)");
  // an empty batch costs nothing
  nn::CTCCriterion e;
  CHECK(e.forward(zeros({5, 0, 4}, DType::Float64), zeros({0, 2}, DType::Int64)) == 0);
  CHECK(e.backward(zeros({5, 0, 4}, DType::Float64), zeros({0, 2}, DType::Int64)).sizes() == Shape{5, 0, 4});
  // NaN in the input: a NaN loss
  Tensor nan = lp.clone();
  nan.set({2, 0, 1}, NAN);
  CHECK(std::isnan(nn::CTCCriterion().forward(nan, targets)));
}

TEST_CASE("nn.CTCCriterion: errors name the criterion, the shapes and the bad value") {
  nn::CTCCriterion ctc;
  const Tensor lp = zeros({5, 2, 4}, DType::Float64);
  const Tensor t = from_vector<int64_t>({1, 2, 3, 1}, {2, 2});
  auto err = [&](auto f) { return error_of(f); };
  CHECK(err([&] {
          ctc.forward(zeros({5, 4}, DType::Float64), t);
        }) == "nn.CTCCriterion::updateOutput: expected log-probabilities of [T x N x C], got [5 x 4]");
  CHECK(has(err([&] { ctc.forward(zeros({5, 2, 4}, DType::Int64), t); }), "int64"));
  CHECK(err([&] {
          ctc.forward(lp, from_vector<int64_t>({1, 2, 3}, {3, 1}));
        }) == "nn.CTCCriterion::updateOutput: expected padded targets of [2 x S] for input [5 x 2 x 4], got [3 x 1]");
  CHECK(err([&] { ctc.forward(lp, t.to(DType::Float64)); }) ==
        "nn.CTCCriterion::updateOutput: expected targets of an integer dtype (int64), got float64 [2 x 2] on cpu");
  CHECK(err([&] {
          ctc.forward(lp, from_vector<int64_t>({1, 2, 3}));
        }) ==
        "nn.CTCCriterion::updateOutput: expected targetLengths with concatenated targets [3] (setLengths or the "
        "four-argument forward), got none");
  CHECK(err([&] {
          ctc.forward(lp, t, from_vector<int64_t>({5, 6}), from_vector<int64_t>({2, 2}));
        }) ==
        "nn.CTCCriterion::updateOutput: expected input lengths in [0, 5] (input [5 x 2 x 4]), got 6 at "
        "inputLengths[1]");
  CHECK(err([&] {
          ctc.forward(lp, t, from_vector<int64_t>({5}), from_vector<int64_t>({2, 2}));
        }) == "nn.CTCCriterion::updateOutput: expected inputLengths of [2] for input [5 x 2 x 4], got [1]");
  CHECK(err([&] {
          ctc.forward(lp, t, from_vector<int64_t>({5, 5}), from_vector<int64_t>({3, 2}));
        }) ==
        "nn.CTCCriterion::updateOutput: expected target lengths in [0, 2] (targets [2 x 2]), got 3 at "
        "targetLengths[0]");
  CHECK(err([&] {
          ctc.forward(lp, from_vector<int64_t>({1, 2, 3}), from_vector<int64_t>({5, 5}), from_vector<int64_t>({2, 2}));
        }) == "nn.CTCCriterion::updateOutput: expected concatenated targets of the target lengths' sum [4], got [3]");
  CHECK(err([&] {
          ctc.forward(lp, from_vector<int64_t>({1, 4, 3, 1}, {2, 2}), from_vector<int64_t>({5, 5}),
                      from_vector<int64_t>({2, 2}));
        }) ==
        "nn.CTCCriterion::updateOutput: expected target labels in [0, 3] other than blank 0 (input [5 x 2 x 4]), "
        "got 4 at targets[0, 1]");
  CHECK(err([&] {
          ctc.backward(lp, from_vector<int64_t>({1, 0, 3, 1}), from_vector<int64_t>({5, 5}),
                       from_vector<int64_t>({2, 2}));
        }) ==
        "nn.CTCCriterion::updateGradInput: expected target labels in [0, 3] other than blank 0 (input [5 x 2 x 4]), "
        "got 0 at targets[1]");
  nn::CTCCriterion bad(4);
  CHECK(err([&] { bad.forward(lp, t); }) ==
        "nn.CTCCriterion::updateOutput: expected blank in [0, 3] (input [5 x 2 x 4]), got 4");
}
