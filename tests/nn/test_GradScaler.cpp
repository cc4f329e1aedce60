// test_GradScaler.cpp: dynamic loss scaling (nn/GradScaler.h) with PyTorch's GradScaler semantics
// — a forced overflow skips exactly that step and halves the scale, growth after N clean steps,
// unscaling by the float32 inverse, state round trips — and float64 master weights over a
// float32 network (nn/MixedPrecision.h: the CPU stand-in for float32 masters over a float16
// network, nn computing float32/float64 only): updates below float32's spacing accumulate in
// the masters, and a small classifier trained with masters and scaling reaches the loss of
// plain float32 training.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "nn/Adam.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/GradScaler.h"
#include "nn/Linear.h"
#include "nn/MixedPrecision.h"
#include "nn/ReLU.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

TEST_CASE("GradScaler: PyTorch's defaults; a forced overflow skips exactly that step and backs off") {
  nn::GradScaler s;
  CHECK(s.scale() == 65536);
  Tensor p = full({2}, 1.0), g = zeros({2});
  nn::SGD opt({p}, {g}, 0.5);
  // a clean step: gradients unscaled by 1 / 65536, then the step
  g.fill_(65536.0 * 0.25);
  CHECK(s.step(opt));
  CHECK(g.get({0}) == 0.25);
  CHECK(p.get({0}) == 1 - 0.5 * 0.25);
  s.update();
  CHECK(s.scale() == 65536);
  CHECK(s.growthTracker() == 1);
  // an overflow: skipped, parameters untouched, scale halved, tracker reset
  g.fill_(1);
  g.set({1}, std::numeric_limits<double>::infinity());
  const Tensor before = p.clone();
  CHECK_FALSE(s.step(opt));
  CHECK(max_abs_diff(p, before) == 0);
  s.update();
  CHECK(s.scale() == 32768);
  CHECK(s.growthTracker() == 0);
  CHECK(s.skippedSteps() == 1);
  // NaN as well
  g.fill_(std::numeric_limits<double>::quiet_NaN());
  CHECK_FALSE(s.step(opt));
  s.update();
  CHECK(s.scale() == 16384);
  CHECK(s.skippedSteps() == 2);
}

TEST_CASE("GradScaler grows after growthInterval clean steps, unscale once per step, state round trip") {
  nn::GradScaler s({.initScale = 8, .growthInterval = 3});
  Tensor p = zeros({1}), g = zeros({1});
  nn::SGD opt({p}, {g}, 0.1);
  for (int k = 1; k <= 7; ++k) {
    g.fill_(s.scale());
    s.unscale(opt);
    CHECK_THROWS_WITH_AS(s.unscale(opt), doctest::Contains("nn.GradScaler::unscale: expected one unscale per step"),
                         Error);
    CHECK(g.item() == 1);
    CHECK(s.step(opt));  // already unscaled: steps on
    s.update();
    CHECK(s.scale() == (k < 3 ? 8 : k < 6 ? 16 : 32));
  }
  CHECK(s.growthTracker() == 1);
  nn::GradScaler r;
  r.loadStateDict(s.stateDict());
  CHECK(r.scale() == 32);
  CHECK(r.growthTracker() == 1);
  CHECK(r.stateDict() == s.stateDict());
  CHECK_THROWS_WITH_AS(r.update(), doctest::Contains("nn.GradScaler::update: expected unscale() or step() first"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::GradScaler({.backoffFactor = 1}), doctest::Contains("backoffFactor in (0, 1)"), Error);
  CHECK(s.scaleGrad(full({2}, 0.5)).get({1}) == 16);
  // disabled (bfloat16): scale 1, every step taken, Inf included
  nn::GradScaler off({.enabled = false});
  CHECK(off.scale() == 1);
  g.fill_(std::numeric_limits<double>::infinity());
  CHECK(off.step(opt));
}

TEST_CASE("MasterWeights: updates below the network dtype's spacing accumulate in the masters") {
  nn::Linear net(1, 1);
  net.weight.fill_(1);
  net.bias.fill_(0);
  nn::MasterWeights master(net, DType::Float64);
  REQUIRE(master.params().size() == 2);
  CHECK(master.params()[0].dtype() == DType::Float64);
  nn::SGD opt(master.params(), master.grads(), 1e-9);
  nn::SGD plain({net.weight.clone()}, {full({1, 1}, 1.0)}, 1e-9);
  for (int k = 0; k < 1000; ++k) {
    net.gradWeight.fill_(-1);
    master.gradsToMaster();
    CHECK(master.grads()[0].get({0, 0}) == -1);
    opt.step();
    master.paramsToModel();
    plain.step();
  }
  // 1000 steps of 1e-9: the master moved by 1e-6 (exactly in float64), the network follows it
  CHECK(master.params()[0].get({0, 0}) == doctest::Approx(1 + 1e-6).epsilon(1e-12));
  CHECK(net.weight.get({0, 0}) == static_cast<double>(static_cast<float>(1 + 1e-6)));
  CHECK(plain.params()[0].get({0, 0}) == 1);  // each float32 step alone rounds away
  // a network already in the master dtype shares its tensors: nothing copied
  nn::Linear same(2, 2);
  nn::MasterWeights shared(same);
  CHECK(shared.params()[0].raw_data() == same.weight.raw_data());
  const auto groups = shared.groups();
  CHECK(groups[0].params.size() == 1);  // the weight; the bias is not decayed
  CHECK(groups[1].weightDecay == 0.0);
}

TEST_CASE("a small classifier trained with master weights and loss scaling reaches plain training's loss") {
  auto make = [] {
    manual_seed(21);
    auto net = std::make_shared<nn::Sequential>();
    net->add(std::make_shared<nn::Linear>(8, 16));
    net->add(std::make_shared<nn::ReLU>());
    net->add(std::make_shared<nn::Linear>(16, 3));
    return net;
  };
  Generator gen(22);
  const Tensor x = normal({48, 8}, 0, 1, gen);
  Tensor y = empty({48}, DType::Int64);
  for (int64_t i = 0; i < 48; ++i) y.set({i}, static_cast<double>((x.get({i, 0}) > 0) + (x.get({i, 1}) > 0)));
  auto train = [&](bool mixed) {
    auto net = make();
    nn::CrossEntropyCriterion crit;
    nn::MasterWeights master(*net, DType::Float64);
    nn::SGD opt(mixed ? master.params() : net->parameters(), mixed ? master.grads() : net->gradParameters(),
                {.lr = 0.1, .momentum = 0.9});
    nn::GradScaler scaler({.initScale = 1024, .growthInterval = 10});
    double loss = 0;
    for (int step = 0; step < 100; ++step) {
      net->zeroGradParameters();
      loss = crit.forward(net->forward(x), y);
      const Tensor& gy = crit.backward(net->output, y);
      if (mixed) {
        net->backward(x, scaler.scaleGrad(gy));
        master.gradsToMaster();
        if (scaler.step(opt)) master.paramsToModel();
        scaler.update();
      } else {
        net->backward(x, gy);
        opt.step();
      }
    }
    if (mixed) CHECK(scaler.scale() > 1024);  // grew: no overflow at this scale
    return loss;
  };
  const double plain = train(false), mixed = train(true);
  CHECK(plain < 0.3);
  CHECK(mixed == doctest::Approx(plain).epsilon(0.05));
}

TEST_CASE("GradScaler options: non-finite or out-of-range settings are refused") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (const nn::GradScaler::Options& o :
       {nn::GradScaler::Options{.initScale = inf}, nn::GradScaler::Options{.initScale = nan},
        nn::GradScaler::Options{.initScale = -1}, nn::GradScaler::Options{.growthFactor = inf},
        nn::GradScaler::Options{.growthFactor = nan}, nn::GradScaler::Options{.backoffFactor = -0.5},
        nn::GradScaler::Options{.growthInterval = -1}}) {
    CHECK_THROWS_WITH_AS(nn::GradScaler{o}, doctest::Contains("nn.GradScaler: expected a finite initScale > 0"), Error);
  }
}

TEST_CASE("Optimizer::stepIfFinite: a nonzero flag changes nothing (state, step counts), zero is step()") {
  // CPU parameters: the flag is read on the host; the scaler keeps its host path
  Tensor p = full({3}, 1.0), g = full({3}, 0.5), q = p.clone(), gq = g.clone();
  nn::SGD sgd({p}, {g}, {.lr = 0.1, .momentum = 0.9});
  nn::SGD ref({q}, {gq}, {.lr = 0.1, .momentum = 0.9});
  sgd.stepIfFinite(ones({1}, DType::Float32));
  CHECK(max_abs_diff(p, full({3}, 1.0)) == 0);
  CHECK(sgd.state(0).count("momentum_buffer") == 0);  // a skipped first step makes no buffer
  sgd.stepIfFinite(zeros({1}, DType::Float32));
  ref.step();
  CHECK(max_abs_diff(p, q) == 0);
  Tensor a = full({2}, 1.0), ga = full({2}, 0.25), b = a.clone(), gb = ga.clone();
  nn::Adam adam({a}, {ga}, 0.1), plain({b}, {gb}, 0.1);
  adam.stepIfFinite(full({1}, std::numeric_limits<double>::quiet_NaN(), DType::Float32));  // NaN != 0: skipped
  CHECK(adam.state(0).count("step") == 0);
  adam.stepIfFinite(zeros({1}, DType::Float32));
  plain.step();
  CHECK(max_abs_diff(a, b) == 0);
  CHECK(adam.state(0).at("step").item() == 1);
  CHECK_THROWS_WITH_AS(adam.stepIfFinite(zeros({2}, DType::Float32)),
                       doctest::Contains("nn.Adam::stepIfFinite: expected foundInf as a one-element float32 tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(sgd.stepIfFinite(Tensor()), doctest::Contains("got an undefined tensor"), Error);
  nn::GradScaler s;
  s.scaleGrad(full({2}, 1.0));
  CHECK_FALSE(s.onDevice());  // CPU tensors: the host path
}
