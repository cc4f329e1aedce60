// test_TransformerEncoderLayer.cpp
#include <doctest/doctest.h>

#include "nn/Dropout.h"
#include "nn/GELU.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/MultiheadAttention.h"
#include "nn/TransformerEncoderLayer.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

TEST_CASE("a PyTorch TransformerEncoderLayer's state_dict, saved with safetensors, loads as saved") {
  // torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).state_dict() through safetensors.torch.save_file
  const auto state = load_safetensors(transformer_data("transformer_encoder_layer.safetensors")).tensors;
  nn::TransformerEncoderLayer m(8, 2, 16, 0.0);
  std::vector<std::string> ours;
  for (const auto& [k, _] : m.stateDict()) ours.push_back(k);
  std::vector<std::string> theirs;
  for (const auto& [k, _] : state) theirs.push_back(k);
  CHECK(ours == theirs);
  m.to(DType::Float64);
  m.loadStateDict(state);  // strict: every name and shape
  const Tensor x = torch_ref("tel.post.x");
  expect_matches("output", m.forward(x), torch_ref("tel.post.y"));
}

TEST_CASE("TransformerEncoderLayer gives PyTorch's outputs and gradients (post-norm, pre-norm GELU causal, padding)") {
  struct Case {
    std::string name;
    int64_t d, nhead, ff;
    std::string act;
    bool batchFirst, normFirst, causal, lengths;
  };
  for (const Case& c : std::vector<Case>{{"post", 8, 2, 16, "relu", false, false, false, false},
                                         {"pre_gelu", 8, 4, 12, "gelu", true, true, true, true},
                                         {"post_masked", 8, 2, 10, "relu", false, false, false, true}}) {
    INFO(c.name);
    const std::string p = "tel." + c.name;
    nn::TransformerEncoderLayer m(c.d, c.nhead, c.ff, 0.0, c.act, c.batchFirst, c.normFirst);
    m.to(DType::Float64);
    m.loadStateDict(torch_refs(p + ".p."));
    m.setCausal(c.causal);
    if (c.lengths) m.setKeyLengths(torch_ref(p + ".lengths"));
    const Tensor x = torch_ref(p + ".x");
    expect_matches("output", m.forward(x), torch_ref(p + ".y"));
    expect_matches("gradInput", m.backward(x, torch_ref(p + ".gy")), torch_ref(p + ".gx"));
    for (const auto& [name, g] : m.namedGradParameters()) {
      INFO(name);
      expect_matches("parameter gradient", g, torch_ref(p + ".g." + name));
    }
  }
}

TEST_CASE("TransformerEncoderLayer finite differences: post- and pre-norm, ReLU and GELU, dropout, masks") {
  Generator gen(20261130);
  struct Case {
    bool normFirst;
    std::string act;
    double dropout;
    bool batchFirst, causal;
  };
  for (const Case& c : std::vector<Case>{{false, "gelu", 0.0, false, false},
                                         {true, "gelu", 0.0, true, true},
                                         {false, "relu", 0.2, false, true},
                                         {true, "gelu", 0.3, false, false}}) {
    INFO("normFirst ", c.normFirst, " ", c.act, " dropout ", c.dropout);
    nn::TransformerEncoderLayer m(4, 2, 6, c.dropout, c.act, c.batchFirst, c.normFirst);
    m.to(DType::Float64);
    m.setCausal(c.causal);
    m.setKeyLengths(from_vector<int64_t>({3, 2}, {2}));
    GradCheckOptions o;
    o.tolerance = 1e-5;  // ReLU kinks are skipped; LayerNorm's rstd makes the second differences larger
    expect_gradients_ok(m, uniform(c.batchFirst ? Shape{2, 3, 4} : Shape{3, 2, 4}, -1, 1, gen, DType::Float64), o);
  }
}

TEST_CASE("TransformerEncoderLayer: named children, pass-through switches, printing, errors") {
  nn::TransformerEncoderLayer m(8, 2, 16, 0.1, "gelu");
  const auto names = m.namedParameters();
  std::vector<std::string> got;
  for (const auto& [k, _] : names) got.push_back(k);
  CHECK(got == std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                        "self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear1.weight",
                                        "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
                                        "norm2.weight", "norm2.bias"});
  CHECK(m.linear1().outputSize == 16);
  CHECK(m.norm2().normalizedShape == Shape{8});
  m.setCausal(true);
  CHECK(m.selfAttn().causal);
  CHECK(m.causal());
  CHECK(dynamic_cast<nn::GELU*>(m.get(nn::TransformerEncoderLayer::Act).get()) != nullptr);
  CHECK(m.str() ==
        "nn.TransformerEncoderLayer(8, nhead=2, dim_feedforward=16, dropout=0.1, gelu) {\n"
        "  (self_attn): nn.MultiheadAttention(8, heads=2, dropout=0.1, causal)\n"
        "  (linear1): nn.Linear(8 -> 16)\n"
        "  (dropout): nn.Dropout(0.100000)\n"
        "  (linear2): nn.Linear(16 -> 8)\n"
        "  (norm1): nn.LayerNorm([8], eps=1e-05)\n"
        "  (norm2): nn.LayerNorm([8], eps=1e-05)\n"
        "  (dropout1): nn.Dropout(0.100000)\n"
        "  (dropout2): nn.Dropout(0.100000)\n"
        "  (activation): nn.GELU\n"
        "}");
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 2, 6})),
                       "nn.TransformerEncoderLayer::updateOutput: expected input [S x B x 8], got [3 x 2 x 6]", Error);
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(8, 2, 16, 0.1, "tanh"),
                       "nn.TransformerEncoderLayer: expected activation 'relu' or 'gelu', got 'tanh'", Error);
  // the layer's own arguments, by the layer's name (not its children's)
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(8, 3),
                       "nn.TransformerEncoderLayer: expected d_model >= 1 divisible by nhead >= 1, got d_model 8 and "
                       "nhead 3",
                       Error);
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(0, 2), doctest::Contains("got d_model 0 and nhead 2"), Error);
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(8, 0), doctest::Contains("got d_model 8 and nhead 0"), Error);
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(8, 2, 16, 1.0),
                       "nn.TransformerEncoderLayer: expected dropout in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(8, 2, 16, 0.1, "relu", false, false, -1.0),
                       "nn.TransformerEncoderLayer: expected a finite layer_norm_eps >= 0, got -1", Error);
  m.modules[nn::TransformerEncoderLayer::Norm1] = std::make_shared<nn::Linear>(8, 8);
  CHECK_THROWS_WITH_AS(m.norm1(), "nn.TransformerEncoderLayer::norm1: expected an nn.LayerNorm, got nn.Linear", Error);
  // a child's error is prefixed with its position, as every container's
  nn::TransformerEncoderLayer k(8, 2, 16);
  k.setKeyLengths(from_vector<int64_t>({9, 1}, {2}));
  CHECK_THROWS_WITH_AS(k.forward(zeros({3, 2, 8})),
                       "In 1 module of nn.TransformerEncoderLayer: nn.MultiheadAttention::updateOutput: expected "
                       "keyLengths in [1, 3] (Sk of k [2 x 2 x 3 x 4]), got 9 at batch entry 0",
                       Error);
}

TEST_CASE("TransformerEncoderLayer: configuration round trip and state round trip") {
  Generator gen(8);
  nn::TransformerEncoderLayer a(8, 2, 12, 0.0, "relu", true, true, 1e-6), b(8, 2, 12, 0.0, "relu", true, true, 1e-6);
  expect_state_roundtrip_ok(a, b, uniform({2, 3, 8}, -1, 1, gen));
  std::vector<nn::ModulePtr> kids(a.modules.begin(), a.modules.end());
  auto c = nn::TransformerEncoderLayer::fromConfig(a.config(), kids);
  CHECK(c->str() == a.str());
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer::fromConfig(a.config(), {}),
                       "nn.TransformerEncoderLayer: expected 9 children, got 0", Error);
}

TEST_CASE("TransformerEncoderLayer without gradInput and freeing gradients: the same parameter gradients") {
  // the benchmark's switches: the attention skips its input's gradient (post-norm; norm1 does
  // in pre-norm), and every child's gradInput goes as soon as it is consumed
  Generator gen(20261125);
  for (bool normFirst : {false, true}) {
    INFO("normFirst ", normFirst);
    nn::TransformerEncoderLayer ref(8, 2, 12, 0.0, "gelu", true, normFirst),
        lean(8, 2, 12, 0.0, "gelu", true, normFirst);
    ref.to(DType::Float64);
    lean.to(DType::Float64);
    lean.loadStateDict(ref.stateDict());
    lean.setGradInputNeeded(false);
    lean.setFreeIntermediateGradients(true);
    const Tensor x = uniform({2, 5, 8}, -1, 1, gen, DType::Float64);
    const Tensor gy = uniform({2, 5, 8}, -1, 1, gen, DType::Float64);
    for (int step = 0; step < 2; ++step) {  // the second step reuses the first's buffers
      ref.zeroGradParameters();
      lean.zeroGradParameters();
      CHECK(max_abs_diff(lean.forward(x), ref.forward(x)) == 0);
      ref.backward(x, gy);
      CHECK_FALSE(lean.backward(x, gy).defined());
      CHECK_FALSE(lean.get(normFirst ? nn::TransformerEncoderLayer::Norm1 : nn::TransformerEncoderLayer::SelfAttn)
                      ->gradInput.defined());
      const auto want = ref.namedGradParameters(), got = lean.namedGradParameters();
      REQUIRE(want.size() == got.size());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO(want[i].first);
        CHECK(max_abs_diff(got[i].second, want[i].second) < 1e-13);
      }
    }
    // Note [Residual sums in place]: the attention's output buffer holds x + sa(x) now
    if (!normFirst) {
      nn::MultiheadAttention sa(8, 2, 0.0, true, true);
      sa.to(DType::Float64);
      sa.loadStateDict(lean.selfAttn().stateDict());
      CHECK(max_abs_diff(lean.selfAttn().output, sa.forward(x).add(x)) == 0);
    }
  }
}
