// test_LRScheduler.cpp: the schedules of nn/LRScheduler.h against their closed forms (the values
// torch.optim.lr_scheduler gives, worked out by hand below), per parameter group, with state
// round trips that resume the same sequence, and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "nn/LRScheduler.h"
#include "nn/SGD.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

namespace {
struct Fixture {
  Tensor a = zeros({2}), ga = zeros({2}), b = zeros({3}), gb = zeros({3});
  // two groups: the default lr 1 and a group lr 0.1
  nn::SGD opt{std::vector<nn::ParamGroup>{{{a}, {ga}, std::nullopt, std::nullopt}, {{b}, {gb}, 0.1, std::nullopt}},
              nn::SGD::Options{.lr = 1}};
};

// The lr of group 0 (base 1) at epochs 0, 1, ..., n - 1, and checks group 1 (base 0.1) follows.
std::vector<double> run(nn::LRScheduler& s, nn::Optimizer& opt, int n) {
  std::vector<double> out;
  for (int e = 0; e < n; ++e) {
    if (e > 0) s.step();
    CHECK(s.lastEpoch() == e);
    out.push_back(opt.groupLr(0));
    CHECK(opt.groupLr(1) == doctest::Approx(0.1 * opt.groupLr(0)).epsilon(1e-12));
  }
  return out;
}

void check_values(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("epoch ", i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
  }
}
}  // namespace

TEST_CASE("StepLR and MultiStepLR") {
  Fixture f;
  nn::StepLR s(f.opt, 2, 0.5);
  check_values(run(s, f.opt, 6), {1, 1, 0.5, 0.5, 0.25, 0.25});
  Fixture g;
  nn::MultiStepLR m(g.opt, {2, 5}, 0.1);
  check_values(run(m, g.opt, 7), {1, 1, 0.1, 0.1, 0.1, 0.01, 0.01});
  CHECK_THROWS_WITH_AS(nn::StepLR(g.opt, 0), doctest::Contains("nn.StepLR: expected stepSize > 0"), Error);
  CHECK_THROWS_WITH_AS(nn::MultiStepLR(g.opt, {3, 1}), doctest::Contains("unsorted milestones"), Error);
}

TEST_CASE("WarmupCosineLR: LinearLR warm-up then CosineAnnealingLR") {
  Fixture f;
  nn::WarmupCosineLR s(f.opt, 2, 6, 0.0, 0.5);
  const double c1 = (1 + std::cos(std::numbers::pi / 4)) / 2, c3 = (1 + std::cos(3 * std::numbers::pi / 4)) / 2;
  check_values(run(s, f.opt, 9), {0.5, 0.75, 1, c1, 0.5, c3, 0, 0, 0});
  Fixture g;
  nn::WarmupCosineLR t(g.opt, 0, 4, 0.2);  // no warm-up, a floor
  CHECK(g.opt.groupLr(0) == 1);
  t.step();
  t.step();
  CHECK(g.opt.groupLr(0) == doctest::Approx(0.2 + 0.8 * 0.5));
  CHECK(g.opt.groupLr(1) == doctest::Approx(0.2 + (0.1 - 0.2) * 0.5));  // eta_min above a group's base, as PyTorch
  CHECK_THROWS_WITH_AS(nn::WarmupCosineLR(g.opt, 4, 4), doctest::Contains("expected 0 <= warmup < total"), Error);
}

TEST_CASE("OneCycleLR: PyTorch's two and three phases, and stepping past totalSteps") {
  Fixture f;
  nn::OneCycleLR s(f.opt, 1.0, 10);
  // initial 1/25 = 0.04, min 0.04 / 1e4; up over steps 0..2 (0.3 * 10 - 1), down over 2..9
  std::vector<double> want;
  auto cosine = [](double from, double to, double pct) {
    return to + (from - to) / 2 * (std::cos(std::numbers::pi * pct) + 1);
  };
  for (int k = 0; k <= 10; ++k) {
    want.push_back(k <= 2 ? cosine(0.04, 1, k / 2.0) : cosine(1, 4e-6, (k - 2) / 7.0));
  }
  std::vector<double> got;
  for (int k = 0; k <= 10; ++k) {
    if (k > 0) s.step();
    got.push_back(f.opt.groupLr(0));
    CHECK(f.opt.groupLr(1) == doctest::Approx(f.opt.groupLr(0)).epsilon(1e-12));  // maxLr for every group
  }
  check_values(got, want);
  CHECK(got[1] == doctest::Approx(0.52));
  CHECK_THROWS_WITH_AS(
      s.step(), doctest::Contains("nn.OneCycleLR::step: expected at most totalSteps = 10 steps, got step 11"), Error);
  CHECK(s.lastEpoch() == 10);  // the failed step changed nothing

  Fixture g;
  nn::OneCycleLR t(g.opt, 1.0, 10, {.cosine = false, .threePhase = true});
  // phases end at 2, 4 and 9: 0.04 -> 1 -> 0.04 -> 4e-6, linear
  std::vector<double> lin;
  for (int k = 0; k <= 9; ++k) {
    if (k > 0) t.step();
    lin.push_back(g.opt.groupLr(0));
  }
  check_values(lin, {0.04, 0.52, 1, 0.52, 0.04, 0.04 + (4e-6 - 0.04) * 0.2, 0.04 + (4e-6 - 0.04) * 0.4,
                     0.04 + (4e-6 - 0.04) * 0.6, 0.04 + (4e-6 - 0.04) * 0.8, 4e-6});
}

TEST_CASE("a schedule resumed from its stateDict sets what an uninterrupted one sets") {
  Fixture f, g;
  nn::WarmupCosineLR s(f.opt, 3, 20);
  for (int k = 0; k < 5; ++k) s.step();
  const auto state = s.stateDict();
  CHECK(state.at("last_epoch") == 5);
  CHECK(state.at("base_lr.1") == doctest::Approx(0.1));
  g.opt.setLr(123);  // whatever the fresh optimizer has: the state's base lrs win
  nn::WarmupCosineLR r(g.opt, 3, 20);
  r.loadStateDict(state);
  CHECK(r.lastEpoch() == 5);
  for (int k = 0; k < 10; ++k) {
    CHECK(g.opt.groupLr(0) == f.opt.groupLr(0));
    CHECK(g.opt.groupLr(1) == f.opt.groupLr(1));
    s.step();
    r.step();
  }
  auto bad = state;
  bad.erase("base_lr.1");
  CHECK_THROWS_WITH_AS(r.loadStateDict(bad),
                       doctest::Contains("nn.WarmupCosineLR::loadStateDict: expected a state with 'base_lr.1'"), Error);
  bad = state;
  bad["base_lr.2"] = 1;
  CHECK_THROWS_WITH_AS(r.loadStateDict(bad), doctest::Contains("a state of another optimizer"), Error);
}

TEST_CASE("ReduceLROnPlateau: patience, cooldown, minLr, mode max, state") {
  Fixture f;
  nn::ReduceLROnPlateau s(f.opt, {.factor = 0.5, .patience = 2, .cooldown = 1, .minLr = 0.3});
  const double metrics[] = {1.0, 0.9, 0.95, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95};
  // epochs 3, 4, 5 are bad (0.9 is no relative improvement on 0.9): the third (> patience 2)
  // halves lr; epoch 6 is cooldown; 7, 8 bad, 9 the third: halved again but not below minLr 0.3
  // (group 1 already is below: unchanged)
  const double want[] = {1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.3};
  for (int k = 0; k < 9; ++k) {
    INFO("epoch ", k + 1);
    s.step(metrics[k]);
    CHECK(f.opt.groupLr(0) == doctest::Approx(want[k]));
    CHECK(f.opt.groupLr(1) == doctest::Approx(0.1));  // below minLr from the start: never lowered
  }
  s.step(0.96);
  CHECK(f.opt.groupLr(0) == doctest::Approx(0.3));  // cooldown
  CHECK(s.best() == 0.9);
  Fixture g;
  nn::ReduceLROnPlateau t(g.opt, {.factor = 0.5, .patience = 2, .cooldown = 1, .minLr = 0.3});
  t.loadStateDict(s.stateDict());
  CHECK(t.lastEpoch() == 10);
  CHECK(t.best() == 0.9);

  Fixture h;
  nn::ReduceLROnPlateau m(h.opt, {.maximize = true, .patience = 0, .threshold = 0.1, .relative = false});
  m.step(0.5);
  m.step(0.55);  // not above 0.5 + 0.1: bad, and patience 0
  CHECK(h.opt.groupLr(0) == doctest::Approx(0.1));
  CHECK_THROWS_WITH_AS(nn::ReduceLROnPlateau(h.opt, {.factor = 1}),
                       doctest::Contains("nn.ReduceLROnPlateau: expected factor in [0, 1)"), Error);
}
