// test_AdamW.cpp: AdamW (decoupled weight decay) against hand-computed steps, its fused CPU step
// against its tensor-op step bit for bit, and parameter groups (Note [Parameter groups] in
// nn/Optimizer.h) for AdamW, Adam and SGD: per-group lr and weight decay, decayGroups().
#include <doctest/doctest.h>

#include <cmath>

#include "nn/AdamW.h"
#include "nn/BatchNormalization.h"
#include "nn/Linear.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

TEST_CASE("AdamW has PyTorch's defaults and its own name") {
  Tensor p = zeros({2}), g = zeros({2});
  nn::AdamW opt({p}, {g});
  CHECK(opt.type_name() == "nn.AdamW");
  CHECK(opt.lr == 1e-3);
  CHECK(opt.beta1 == 0.9);
  CHECK(opt.beta2 == 0.999);
  CHECK(opt.eps == 1e-8);
  CHECK(opt.weightDecay == 1e-2);
  CHECK_THROWS_WITH_AS(nn::AdamW({p}, {g}, {.weightDecay = -1}),
                       doctest::Contains("nn.AdamW::AdamW: expected weightDecay >= 0, got -1"), Error);
}

TEST_CASE("AdamW steps match hand-computed updates (decay outside the moments)") {
  for (DType dt : {DType::Float64, DType::Float32}) {
    INFO(name(dt));
    const double tol = dt == DType::Float64 ? 1e-14 : 1e-6;
    Tensor p = full({1}, 2.0, dt), g = zeros({1}, dt);
    nn::AdamW opt({p}, {g}, {.lr = 0.1, .weightDecay = 0.5});
    g.fill_(0.5);
    opt.step();
    // p = 2 * (1 - 0.05) = 1.9; m^ = 0.5, v^ = 0.25 (the gradient alone) -> p -= 0.1 * 0.5 / (0.5 + 1e-8)
    const double p1 = 2 * 0.95 - 0.1 * 0.5 / (0.5 + 1e-8);
    CHECK(p.item() == doctest::Approx(p1).epsilon(tol));
    CHECK(opt.state(0).at("exp_avg").item() == doctest::Approx(0.05).epsilon(tol));  // no decay term in m
    g.fill_(-1);
    opt.step();
    const double m2 = 0.9 * 0.05 - 0.1, v2 = 0.999 * 0.00025 + 0.001;
    const double p2 = p1 * 0.95 - 0.1 * (m2 / 0.19) / (std::sqrt(v2 / (1 - 0.999 * 0.999)) + 1e-8);
    CHECK(p.item() == doctest::Approx(p2).epsilon(tol));
    CHECK(opt.state(0).at("step").item() == 2);
  }
}

TEST_CASE("AdamW's fused CPU step gives its tensor-op step's bits") {
  for (DType dt : {DType::Float64, DType::Float32}) {
    INFO(name(dt));
    Generator gen(5);
    const Tensor start = uniform({40, 70}, -1, 1, gen, dt);
    Tensor pa = start.clone(), ga = zeros({40, 70}, dt), pb = start.clone(), gb = zeros({40, 70}, dt);
    const nn::AdamW::Options o{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6, .weightDecay = 0.3};
    nn::AdamW fused({pa}, {ga}, o), ops({pb}, {gb}, o);
    ops.fused = false;
    for (int step = 0; step < 5; ++step) {
      const Tensor g = uniform({40, 70}, -1, 1, gen, dt);
      ga.copy_(g);
      gb.copy_(g);
      fused.step();
      ops.step();
    }
    CHECK(max_abs_diff(pa, pb) == 0);
    CHECK(max_abs_diff(fused.state(0).at("exp_avg"), ops.state(0).at("exp_avg")) == 0);
    CHECK(max_abs_diff(fused.state(0).at("exp_avg_sq"), ops.state(0).at("exp_avg_sq")) == 0);
    CHECK(max_abs_diff(pa, start) > 0.01);
  }
}

TEST_CASE("AdamW differs from Adam with the same weight decay (decoupled, not L2)") {
  Tensor pa = full({1}, 1.0, DType::Float64), ga = full({1}, 0.1, DType::Float64);
  Tensor pb = pa.clone(), gb = ga.clone();
  nn::AdamW w({pa}, {ga}, {.lr = 0.1, .weightDecay = 1});
  nn::Adam a({pb}, {gb}, {.lr = 0.1, .weightDecay = 1});
  w.step();
  a.step();
  // AdamW: 0.9 - 0.1 (m^/sqrt(v^) = 1); Adam: g' = 1.1, still one lr against its sign: 0.9
  CHECK(pa.item() == doctest::Approx(0.8).epsilon(1e-7));
  CHECK(pb.item() == doctest::Approx(0.9).epsilon(1e-7));
}

TEST_CASE("decayGroups leaves biases and batch-norm parameters undecayed under AdamW") {
  manual_seed(3);
  nn::Sequential net;
  net.add(std::make_shared<nn::Linear>(3, 4));
  net.add(std::make_shared<nn::BatchNormalization>(4));
  std::map<std::string, Tensor> before;
  for (const auto& [k, t] : net.stateDict()) before[k] = t.clone();  // stateDict shares storage
  nn::AdamW opt(nn::decayGroups(net), {.lr = 0.1, .weightDecay = 0.5});
  REQUIRE(opt.numGroups() == 2);
  CHECK(opt.groupWeightDecay(0) == 0.5);
  CHECK(opt.groupWeightDecay(1) == 0);
  CHECK(opt.params().size() == 4);
  net.zeroGradParameters();
  opt.step();  // zero gradients: only the decay moves anything
  const auto after = net.stateDict();
  CHECK(max_abs_diff(after.at("0.weight"), before.at("0.weight").mul(0.95)) < 1e-7);
  for (const char* key : {"0.bias", "1.weight", "1.bias"}) {
    INFO(key);
    CHECK(max_abs_diff(after.at(key), before.at(key)) == 0);
  }
  // a predicate by name: decay the linear layer's bias too
  auto groups = nn::decayGroups(net, [](const std::string& name, const Tensor&) { return name.starts_with("1."); });
  CHECK(groups[0].params.size() == 2);
  CHECK(groups[1].params.size() == 2);
}

TEST_CASE("parameter groups: per-group lr and weight decay for SGD and Adam, setLr, checks") {
  Tensor a = full({2}, 1.0, DType::Float64), ga = full({2}, 1.0, DType::Float64);
  Tensor b = full({3}, 1.0, DType::Float64), gb = full({3}, 1.0, DType::Float64);
  std::vector<nn::ParamGroup> groups{{{a}, {ga}, std::nullopt, std::nullopt}, {{b}, {gb}, 0.5, 0.0}};
  nn::SGD sgd(groups, {.lr = 0.1, .weightDecay = 1});
  CHECK(sgd.groupLr(0) == 0.1);
  CHECK(sgd.groupLr(1) == 0.5);
  CHECK(sgd.groupOf(1) == 1);
  sgd.step();
  CHECK(a.max().item() == doctest::Approx(1 - 0.1 * 2));  // decayed gradient 1 + 1 * 1
  CHECK(b.max().item() == doctest::Approx(1 - 0.5 * 1));  // its own lr, no decay
  sgd.setLr(0.01);
  CHECK(sgd.groupLr(0) == 0.01);
  CHECK(sgd.groupLr(1) == 0.01);
  sgd.setGroupLr(1, 0.2);
  CHECK(sgd.groupLr(1) == 0.2);
  CHECK_THROWS_WITH_AS(sgd.setGroupLr(2, 0.1), doctest::Contains("nn.SGD::setGroupLr: expected a group below 2, got 2"),
                       Error);
  sgd.setGroupLr(0, -1);
  CHECK_THROWS_WITH_AS(sgd.step(), doctest::Contains("nn.SGD::step: expected lr >= 0 in parameter group 0, got -1"),
                       Error);

  // Adam's one-lr first step moves every coordinate by its group's lr
  Tensor c = zeros({2}, DType::Float64), gc = full({2}, 1.0, DType::Float64);
  Tensor d = zeros({2}, DType::Float64), gd = full({2}, 1.0, DType::Float64);
  nn::Adam adam(std::vector<nn::ParamGroup>{{{c}, {gc}, std::nullopt, std::nullopt}, {{d}, {gd}, 0.3, std::nullopt}},
                {.lr = 0.1});
  adam.step();
  CHECK(c.max().item() == doctest::Approx(-0.1).epsilon(1e-7));
  CHECK(d.max().item() == doctest::Approx(-0.3).epsilon(1e-7));
  CHECK_THROWS_WITH_AS(
      nn::SGD(std::vector<nn::ParamGroup>{{{a, b}, {ga}, std::nullopt, std::nullopt}}, {.lr = 1}),
      doctest::Contains("nn.SGD: expected one gradient per parameter, got 2 parameters and 1 gradients"), Error);
}
