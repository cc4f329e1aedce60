// test_SGD.cpp
#include <doctest/doctest.h>

#include "nn/AdamW.h"
#include "nn/Linear.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

namespace {
// One parameter p0 = 1, gradient 0.5 at the first step and -1 at the second; returns p2.
double two_steps(const nn::SGD::Options& o, DType dt = DType::Float64) {
  Tensor p = full({1}, 1.0, dt), g = zeros({1}, dt);
  nn::SGD opt({p}, {g}, o);
  g.fill_(0.5);
  opt.step();
  g.fill_(-1);
  opt.step();
  return p.item();
}
}  // namespace

TEST_CASE("SGD steps match hand-computed updates (one parameter, two steps)") {
  // plain: 1 - 0.1 * 0.5 = 0.95, then 0.95 + 0.1 = 1.05
  CHECK(two_steps({.lr = 0.1}) == doctest::Approx(1.05).epsilon(1e-15));
  // momentum 0.9: buf = 0.5 -> p = 0.95; buf = 0.45 - 1 = -0.55 -> p = 1.005
  CHECK(two_steps({.lr = 0.1, .momentum = 0.9}) == doctest::Approx(1.005).epsilon(1e-15));
  // Nesterov: d = 0.5 + 0.9 * 0.5 = 0.95 -> p = 0.905; buf = -0.55, d = -1 - 0.495 -> p = 1.0545
  CHECK(two_steps({.lr = 0.1, .momentum = 0.9, .nesterov = true}) == doctest::Approx(1.0545).epsilon(1e-15));
  // dampening 0.5, weight decay 0.1: d = 0.6, buf = 0.6 -> p = 0.94;
  // d = -1 + 0.094 = -0.906, buf = 0.54 - 0.453 = 0.087 -> p = 0.9313
  CHECK(two_steps({.lr = 0.1, .momentum = 0.9, .dampening = 0.5, .weightDecay = 0.1}) ==
        doctest::Approx(0.9313).epsilon(1e-14));
  // weight decay alone: d = 0.6 -> 0.94; d = -1 + 0.094 -> 0.94 + 0.0906 = 1.0306
  CHECK(two_steps({.lr = 0.1, .weightDecay = 0.1}) == doctest::Approx(1.0306).epsilon(1e-14));
  CHECK(two_steps({.lr = 0.1, .momentum = 0.9}, DType::Float32) == doctest::Approx(1.005).epsilon(1e-6));
}

TEST_CASE("SGD on a module updates its parameters in place; zeroGrad; state") {
  manual_seed(1);
  nn::Linear m(3, 2);
  const Tensor w0 = m.weight.clone(), b0 = m.bias.clone();
  nn::SGD opt(m, 0.5, 0.9);
  REQUIRE(opt.params().size() == 2);
  CHECK(opt.params()[0].is_same_view(m.weight));
  m.gradWeight.fill_(1);
  m.gradBias.fill_(-2);
  opt.step();
  CHECK(max_abs_diff(m.weight, w0.sub(0.5)) < 1e-7);
  CHECK(max_abs_diff(m.bias, b0.add(1.0)) < 1e-7);
  CHECK(opt.state(0).count("momentum_buffer"));
  CHECK(max_abs_diff(opt.state(1).at("momentum_buffer"), full({2}, -2)) == 0);
  opt.zeroGrad();
  CHECK(m.gradWeight.abs().max().item() == 0);
  CHECK(m.gradBias.abs().max().item() == 0);
  CHECK(opt.type_name() == "nn.SGD");
  // plain SGD keeps no state
  nn::SGD plain(m, 0.1);
  plain.step();
  CHECK(plain.stateDict().empty());
}

TEST_CASE("SGD stateDict round trip resumes identically") {
  Tensor pa = full({2}, 1.0, DType::Float64), ga = zeros({2}, DType::Float64);
  Tensor pb = pa.clone(), gb = ga.clone();
  nn::SGD a({pa}, {ga}, 0.1, 0.9);
  ga.fill_(0.3);
  a.step();
  pb.copy_(pa);
  nn::SGD b({pb}, {gb}, 0.1, 0.9);
  const auto state = a.stateDict();
  REQUIRE(state.count("0.momentum_buffer"));
  b.loadStateDict(state);
  CHECK_FALSE(b.state(0).at("momentum_buffer").shares_storage(state.at("0.momentum_buffer")));
  ga.fill_(-0.7);
  gb.fill_(-0.7);
  a.step();
  b.step();
  CHECK(max_abs_diff(pa, pb) == 0);
  CHECK_THROWS_WITH_AS(b.loadStateDict({{"1.momentum_buffer", zeros({2})}}),
                       "nn.SGD::loadStateDict: expected keys '<parameter index>.<name>' with an index below 1, got "
                       "'1.momentum_buffer'",
                       Error);
  CHECK_THROWS_WITH_AS(b.loadStateDict({{"0.momentum_buffer", zeros({3})}}),
                       "nn.SGD::loadStateDict: '0.momentum_buffer' has shape [3], expected [2] (parameter 0)", Error);
}

TEST_CASE("SGD argument errors") {
  Tensor p = zeros({2}), g = zeros({2});
  CHECK_THROWS_WITH_AS(nn::SGD({p}, {g}, -1), "nn.SGD::SGD: expected lr >= 0, got -1.000000", Error);
  CHECK_THROWS_WITH_AS(nn::SGD({p}, {g}, 0.1, 0, 0, 0, true),
                       "nn.SGD::SGD: expected momentum > 0 and dampening 0 for Nesterov momentum, got momentum "
                       "0.000000 and dampening 0.000000",
                       Error);
  CHECK_THROWS_WITH_AS(nn::SGD({p}, {}, 0.1),
                       "nn.SGD: expected one gradient per parameter, got 1 parameters and 0 gradients", Error);
  CHECK_THROWS_WITH_AS(nn::SGD({p}, {zeros({3})}, 0.1),
                       "nn.SGD: expected the gradient of parameter 0 to match it (float32 [2] on cpu), got float32 [3] "
                       "on cpu",
                       Error);
  nn::SGD opt({p}, {g}, 0.1);
  opt.lr = -2;
  CHECK_THROWS_WITH_AS(opt.step(), "nn.SGD::step: expected lr >= 0, got -2.000000", Error);
}

TEST_CASE("SGD on CPU parameters: the fused switch changes nothing (they take the tensor ops either way)") {
  // Note [Fused optimizer steps]: only CUDA parameters are fused; CPU ones put in a CUDA group
  // would throw from tensor::cuda::sgd_step
  for (bool nesterov : {false, true}) {
    INFO("nesterov ", nesterov);
    auto make = [](std::vector<Tensor>& p, std::vector<Tensor>& g) {
      Generator gen(8);
      p = {uniform({1}, -1, 1, gen, DType::Float32), uniform({4097}, -1, 1, gen, DType::Float32),
           uniform({20, 30}, -1, 1, gen, DType::Float32).t()};
      g.clear();
      for (const Tensor& t : p) g.push_back(zeros_like(t));
    };
    std::vector<Tensor> pa, ga, pb, gb;
    make(pa, ga);
    make(pb, gb);
    const nn::SGD::Options o{.lr = 0.05, .momentum = 0.9, .weightDecay = 1e-2, .nesterov = nesterov};
    nn::SGD fused(pa, ga, o), ops(pb, gb, o);
    ops.fused = false;
    const Tensor start = pa[1].clone();
    Generator gen(9);
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < ga.size(); ++i) {
        const Tensor g = uniform(ga[i].sizes(), -1, 1, gen, DType::Float32);
        ga[i].copy_(g);
        gb[i].copy_(g);
      }
      fused.step();
      ops.step();
    }
    for (size_t i = 0; i < pa.size(); ++i) {
      CHECK(max_abs_diff(pa[i], pb[i]) == 0);
      CHECK(max_abs_diff(fused.state(i).at("momentum_buffer"), ops.state(i).at("momentum_buffer")) == 0);
    }
    CHECK(max_abs_diff(pa[1], start) > 0.01);  // it moved
  }
}

TEST_CASE("parameter lists as torch.optim checks them: some parameter, none in two groups") {
  Tensor a = full({2}, 1.0), ga = full({2}, 1.0), b = full({3}, 1.0), gb = full({3}, 1.0);
  using Groups = std::vector<nn::ParamGroup>;
  // no parameter at all: no list, no group, only empty groups, a module without parameters
  CHECK_THROWS_WITH_AS(nn::SGD(std::vector<Tensor>{}, std::vector<Tensor>{}, 0.1),
                       "nn.SGD: optimizer got an empty parameter list", Error);
  CHECK_THROWS_WITH_AS(nn::SGD(Groups{}, {.lr = 0.1}), "nn.SGD: optimizer got an empty parameter list", Error);
  CHECK_THROWS_WITH_AS(nn::Adam(Groups{{}, {}}, {.lr = 0.1}), "nn.Adam: optimizer got an empty parameter list", Error);
  nn::Sequential empty;
  CHECK_THROWS_WITH_AS(nn::AdamW{empty}, "nn.AdamW: optimizer got an empty parameter list", Error);
  // one empty group beside others is fine (decayGroups of a module without biases)
  nn::SGD some(Groups{{{a}, {ga}, std::nullopt, std::nullopt}, {}}, {.lr = 0.1});
  CHECK(some.numGroups() == 2);

  // a tensor in two groups: every step would update it twice
  const Groups twice{{{a, b}, {ga, gb}, std::nullopt, std::nullopt}, {{a}, {ga}, 0.5, std::nullopt}};
  CHECK_THROWS_WITH_AS(nn::SGD(twice, {.lr = 0.1}),
                       "nn.SGD: some parameters appear in more than one parameter group: parameter 2 (group 1) is "
                       "parameter 0 (group 0)",
                       Error);
  CHECK_THROWS_WITH_AS(nn::AdamW{twice}, doctest::Contains("nn.AdamW: some parameters appear in more than one"), Error);
  // the same view counts, other views of one storage do not (they are other parameters)
  const Tensor whole = full({4}, 1.0), gwhole = zeros({4});
  CHECK_THROWS_WITH_AS(nn::SGD(Groups{{{whole.narrow(0, 0, 2)}, {gwhole.narrow(0, 0, 2)}, std::nullopt, std::nullopt},
                                      {{whole.narrow(0, 0, 2)}, {gwhole.narrow(0, 0, 2)}, std::nullopt, std::nullopt}},
                               {.lr = 0.1}),
                       doctest::Contains("more than one parameter group"), Error);
  nn::SGD halves(Groups{{{whole.narrow(0, 0, 2)}, {gwhole.narrow(0, 0, 2)}, std::nullopt, std::nullopt},
                        {{whole.narrow(0, 2, 2)}, {gwhole.narrow(0, 2, 2)}, std::nullopt, std::nullopt}},
                 {.lr = 0.1});
  CHECK(halves.params().size() == 2);
  // within one group a tensor listed twice is still taken (stepped twice, as before)
  nn::SGD repeated({a, a}, {ga, ga}, 0.25);
  repeated.step();
  CHECK(a.max().item() == doctest::Approx(0.5));
}
