// test_SwiGLU.cpp: nn.SwiGLU against PyTorch's float64 HF-style LlamaMLP (with and without bias),
// finite differences, the gate's non-finite values (nn.SiLU's), leading and empty dims,
// setGradInputNeeded(false), errors, printing, configuration and model files.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "convert/ModelFile.h"
#include "nn/Linear.h"
#include "nn/SiLU.h"
#include "nn/SwiGLU.h"
#include "tests/support/AddingChecks.h"
#include "tests/support/DecoderNormReference.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

TEST_CASE("SwiGLU gives PyTorch's output and gradients (HF's LlamaMLP), with and without bias") {
  for (const auto& [name, dim, hidden, bias] :
       std::vector<std::tuple<const char*, int64_t, int64_t, bool>>{{"plain", 6, 10, false}, {"bias", 4, 7, true}}) {
    INFO(name);
    const std::string p = std::string("swiglu.") + name + ".";
    nn::SwiGLU m(dim, hidden, bias);
    m.to(DType::Float64);
    std::map<std::string, Tensor> state;
    for (const auto& [k, v] : decoder_refs(p)) {
      if (k.find("_proj.") != std::string::npos && k.rfind("grad.", 0) != 0) state[k] = v;
    }
    m.loadStateDict(state);  // strict: HF's names are ours
    const Tensor x = decoder_ref(p + "x");
    expect_matches("output", m.forward(x), decoder_ref(p + "y"));
    expect_matches("gradInput", m.backward(x, decoder_ref(p + "gy")), decoder_ref(p + "gx"));
    for (const auto& [k, g] : m.namedGradParameters()) expect_matches(k.c_str(), g, decoder_ref(p + "grad." + k));
  }
}

TEST_CASE("SwiGLU is its three Linear modules around silu(gate) * up") {
  Generator gen(4);
  nn::SwiGLU m(5, 3, true);
  m.to(DType::Float64);
  nn::Linear gate(5, 3), up(5, 3), down(3, 5);
  for (nn::Linear* l : {&gate, &up, &down}) l->to(DType::Float64);
  gate.loadStateDict({{"weight", m.gateWeight}, {"bias", m.gateBias}});
  up.loadStateDict({{"weight", m.upWeight}, {"bias", m.upBias}});
  down.loadStateDict({{"weight", m.downWeight}, {"bias", m.downBias}});
  nn::SiLU silu;
  const Tensor x = uniform({4, 5}, -2, 2, gen, DType::Float64);
  const Tensor h = silu.forward(gate.forward(x)).clone() * up.forward(x);
  CHECK(max_abs_diff(m.forward(x), down.forward(h)) < 1e-14);
}

TEST_CASE("SwiGLU finite differences: with and without bias, leading dims, strided input") {
  Generator gen(20261202);
  for (bool bias : {false, true}) {
    for (const Shape& input : {Shape{3, 4}, Shape{2, 3, 4}, Shape{4}, Shape{2, 1, 2, 4}}) {
      INFO(shape_str(input), bias ? " bias" : "");
      nn::SwiGLU m(4, 6, bias);
      m.to(DType::Float64);
      expect_gradients_ok(m, uniform(input, -2, 2, gen, DType::Float64));
    }
  }
  nn::SwiGLU m(3, 5);
  m.to(DType::Float64);
  expect_gradients_ok(m, uniform({3, 4}, -1, 1, gen, DType::Float64).t());  // [4 x 3], strided
}

TEST_CASE("SwiGLU: NaN and Inf in the input follow silu's and the products' IEEE values") {
  // one input element reaches every gate and up value of its row, so the row is NaN
  // everywhere (0 * Inf or Inf - Inf meet it in the products) and the other rows stay finite
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    INFO("bad ", bad);
    Generator gen(9);
    nn::SwiGLU m(4, 6);
    m.to(DType::Float64);
    Tensor x = uniform({3, 4}, -1, 1, gen, DType::Float64);
    x.set({1, 2}, bad);
    const Tensor y = m.forward(x);
    for (int64_t c = 0; c < 4; ++c) {
      CHECK(std::isfinite(y.get({0, c})));
      CHECK(!std::isfinite(y.get({1, c})));
      CHECK(std::isfinite(y.get({2, c})));
    }
    m.backward(x, ones({3, 4}, DType::Float64));
    for (int64_t c = 0; c < 4; ++c) {
      CHECK(std::isfinite(m.gradInput.get({0, c})));
      CHECK(std::isfinite(m.gradInput.get({2, c})));
    }
  }
  // the gate alone: silu(-Inf) = NaN and silu(+Inf) = +Inf, as nn.SiLU
  nn::SwiGLU m(1, 1);
  m.to(DType::Float64);
  m.gateWeight.fill_(1);
  m.upWeight.fill_(1);
  m.downWeight.fill_(1);
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor y = m.forward(from_vector<double>({-inf, inf, 2}, {3, 1}));
  CHECK(std::isnan(y.get({0, 0})));
  CHECK(y.get({1, 0}) == inf);
  CHECK(y.get({2, 0}) == doctest::Approx(2 * 2 / (1 + std::exp(-2.0))).epsilon(1e-15));
}

TEST_CASE("SwiGLU: empty leading dims, and without gradInput the parameters' gradients are the same") {
  Generator gen(10);
  nn::SwiGLU m(4, 6, true);
  m.to(DType::Float64);
  m.zeroGradParameters();
  for (const Shape& empty : {Shape{0, 4}, Shape{2, 0, 4}}) {
    INFO(shape_str(empty));
    CHECK(m.forward(zeros(empty, DType::Float64)).sizes() == empty);
    CHECK(m.backward(zeros(empty, DType::Float64), zeros(empty, DType::Float64)).sizes() == empty);
  }
  for (const auto& [k, g] : m.namedGradParameters()) CHECK(g.abs().max().item() == 0);

  const Tensor x = uniform({2, 3, 4}, -1, 1, gen, DType::Float64), gy = uniform({2, 3, 4}, -1, 1, gen, DType::Float64);
  m.forward(x);
  m.backward(x, gy);
  std::map<std::string, Tensor> with;
  for (const auto& [k, g] : m.namedGradParameters()) with[k] = g.clone();
  m.zeroGradParameters();
  m.setGradInputNeeded(false);
  m.forward(x);
  CHECK(!m.backward(x, gy).defined());
  for (const auto& [k, g] : m.namedGradParameters()) CHECK(max_abs_diff(g, with[k]) == 0);
}

TEST_CASE("SwiGLU: errors, printing, configuration, state and model-file round trips") {
  Generator gen(11);
  nn::SwiGLU m(4, 6);
  CHECK(m.str() == "nn.SwiGLU(4 -> 6 -> 4)");
  CHECK(nn::SwiGLU(4, 6, true).str() == "nn.SwiGLU(4 -> 6 -> 4) with bias");
  CHECK(nn::SwiGLU::fromConfig(nn::SwiGLU(3, 5, true).config())->str() == "nn.SwiGLU(3 -> 5 -> 3) with bias");
  const auto names = m.stateDict();
  CHECK(names.size() == 3);
  CHECK(names.at("gate_proj.weight").sizes() == Shape{6, 4});
  CHECK(names.at("up_proj.weight").sizes() == Shape{6, 4});
  CHECK(names.at("down_proj.weight").sizes() == Shape{4, 6});
  CHECK(nn::SwiGLU(4, 6, true).stateDict().count("down_proj.bias") == 1);
  CHECK_THROWS_WITH_AS(nn::SwiGLU(0, 6), "nn.SwiGLU: expected positive dim and hidden sizes, got dim 0 and hidden 6",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 5})),
                       "nn.SwiGLU::updateOutput: expected input of [* x 4] (any leading dims), got [2 x 5]", Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4}, DType::Float64)),
                       doctest::Contains("nn.SwiGLU::updateOutput: expected input of gate_proj.weight's dtype"), Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4}, DType::Int64)), doctest::Contains("nn.SwiGLU::updateOutput"), Error);
  CHECK_THROWS_WITH_AS(nn::SwiGLU(4, 6).backward(zeros({2, 4}), zeros({2, 4})),
                       "nn.SwiGLU::updateGradInput: expected a forward() of input float32 [2 x 4] on cpu first", Error);
  m.forward(zeros({2, 4}));
  CHECK_THROWS_WITH_AS(
      m.backward(zeros({2, 4}), zeros({4, 2})),
      doctest::Contains("nn.SwiGLU::updateGradInput: expected gradOutput of the output's shape [2 x 4]"), Error);
  CHECK_THROWS_WITH_AS(nn::SwiGLU(4, 6).accGradParameters(zeros({2, 4}), zeros({2, 4})),
                       doctest::Contains("nn.SwiGLU::accGradParameters: expected updateGradInput() after the forward"),
                       Error);
  m.upWeight = zeros({6, 3});  // a public field, replaced by hand
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4})),
                       doctest::Contains("nn.SwiGLU::updateOutput: expected up_proj.weight of [6 x 4]"), Error);
  m.upWeight = zeros({6, 4}, DType::Float64);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4})),
                       doctest::Contains("expected every parameter of gate_proj.weight's dtype and device"), Error);

  nn::SwiGLU a(3, 5, true), b(3, 5, true);
  expect_state_roundtrip_ok(a, b, uniform({2, 3}, -1, 1, gen));

  auto orig = std::make_shared<nn::SwiGLU>(4, 7, true);
  const nn::ModulePtr back = nn::build_model(nn::describe_model(*orig));
  back->loadStateDict(orig->stateDict());
  CHECK(back->str() == orig->str());
  const Tensor xi = uniform({2, 3, 4}, -1, 1, gen);
  CHECK(max_abs_diff(back->forward(xi), orig->forward(xi)) == 0);
}

TEST_CASE("SwiGLU forwardAdding: forward + addend bit for bit, the same gradients, the addend checked") {
  Generator gen(12);
  for (bool bias : {false, true}) {
    nn::SwiGLU m(6, 10, bias);
    m.to(DType::Float64);
    expect_adding_exact(m, uniform({3, 6}, -1, 1, gen, DType::Float64));
    expect_adding_exact(m, uniform({2, 2, 6}, -1, 1, gen, DType::Float64));
    CHECK_THROWS_WITH_AS(m.forwardAdding(zeros({3, 6}, DType::Float64), zeros({3, 5}, DType::Float64)),
                         "nn.SwiGLU::forwardAdding: expected a contiguous addend [3 x 6] of float64 on cpu, got "
                         "float64 [3 x 5] on cpu",
                         Error);
  }
}