// test_TransformerDecoderLayer.cpp: nn.TransformerDecoderLayer against PyTorch's
// nn.TransformerDecoderLayer (float64 references from scripts/make_decoder_layer_reference.py:
// post- and pre-norm, ReLU and GELU, tgt_is_causal, key padding masks and lengths, attn masks),
// its state_dict as PyTorch saves it, finite differences through the table interface, the
// model-file round trip, the switches and the errors.
#include <doctest/doctest.h>

#include <algorithm>

#include "convert/ModelFile.h"
#include "nn/GELU.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/MultiheadAttention.h"
#include "nn/TransformerDecoderLayer.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TempDir.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

namespace {

const std::map<std::string, Tensor>& refs() {
  static const std::map<std::string, Tensor> r =
      load_safetensors(transformer_data("decoder_layer_reference.safetensors")).tensors;
  return r;
}

Tensor dref(const std::string& key) {
  auto it = refs().find(key);
  INFO("reference key ", key);
  REQUIRE(it != refs().end());
  return it->second;
}

bool has_ref(const std::string& key) { return refs().count(key) > 0; }

std::map<std::string, Tensor> refs_under(const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, v] : refs()) {
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  }
  return out;
}

const Tensor& tensor_of(const nn::Value& v) { return v.tensorOrUndefined(); }

}  // namespace

TEST_CASE("a PyTorch TransformerDecoderLayer's state_dict, saved with safetensors, loads as saved") {
  // torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0).state_dict() through safetensors.torch.save_file
  const auto state = load_safetensors(transformer_data("decoder_layer_state.safetensors")).tensors;
  nn::TransformerDecoderLayer m(8, 2, 16, 0.0);
  std::vector<std::string> ours, theirs;
  for (const auto& [k, _] : m.stateDict()) ours.push_back(k);
  for (const auto& [k, _] : state) theirs.push_back(k);
  CHECK(ours == theirs);
  m.to(DType::Float64);
  m.loadStateDict(state);  // strict: every name and shape
  const nn::Value& y = m.forward(nn::Table{dref("post.tgt"), dref("post.memory")});
  expect_matches("output", tensor_of(y), dref("post.y"));
}

TEST_CASE("TransformerDecoderLayer gives PyTorch's outputs and gradients (post/pre-norm, causal, masks, padding)") {
  struct Case {
    std::string name;
    int64_t d, nhead, ff;
    std::string act;
    bool batchFirst, normFirst, causal;
  };
  for (const Case& c : std::vector<Case>{{"post", 8, 2, 16, "relu", false, false, false},
                                         {"pre_gelu_causal", 8, 4, 12, "gelu", true, true, true},
                                         {"post_gelu_padding", 8, 2, 10, "gelu", false, false, false},
                                         {"pre_masks", 8, 2, 12, "relu", false, true, false}}) {
    const std::string p = c.name + ".";
    // the memory's padding as a uint8 mask, and (where given) as key lengths
    for (bool lengths : {false, true}) {
      if (lengths && !has_ref(p + "memory_lengths")) continue;
      INFO(c.name, lengths ? " (memory key lengths)" : "");
      nn::TransformerDecoderLayer m(c.d, c.nhead, c.ff, 0.0, c.act, c.batchFirst, c.normFirst);
      m.to(DType::Float64);
      m.loadStateDict(refs_under(p + "p."));
      m.setTgtIsCausal(c.causal);
      if (has_ref(p + "tgt_mask")) m.setTgtMask(dref(p + "tgt_mask"));
      if (has_ref(p + "memory_mask")) m.setMemoryMask(dref(p + "memory_mask"));
      if (has_ref(p + "tgt_key_padding_mask")) m.setTgtKeyPaddingMask(dref(p + "tgt_key_padding_mask"));
      if (has_ref(p + "memory_key_padding_mask")) {
        if (lengths) {
          m.setMemoryKeyLengths(dref(p + "memory_lengths"));
        } else {
          m.setMemoryKeyPaddingMask(dref(p + "memory_key_padding_mask"));
        }
      }
      const nn::Value in = nn::Table{dref(p + "tgt"), dref(p + "memory")};
      expect_matches("output", tensor_of(m.forward(in)), dref(p + "y"));
      const nn::Value& g = m.backward(in, dref(p + "gy"));
      REQUIRE(g.size() == 2);
      expect_matches("gradTgt", tensor_of(g[0]), dref(p + "gtgt"));
      expect_matches("gradMemory", tensor_of(g[1]), dref(p + "gmemory"));
      size_t n = 0;
      for (const auto& [name, grad] : m.namedGradParameters()) {
        INFO(name);
        expect_matches("parameter gradient", grad, dref(p + "g." + name));
        ++n;
      }
      CHECK(n == refs_under(p + "g.").size());
    }
  }
}

TEST_CASE("TransformerDecoderLayer finite differences: post- and pre-norm, ReLU and GELU, dropout, masks") {
  Generator gen(20261202);
  struct Case {
    bool normFirst;
    std::string act;
    double dropout;
    bool batchFirst, causal, masks;
  };
  for (const Case& c : std::vector<Case>{{false, "gelu", 0.0, false, false, false},
                                         {true, "gelu", 0.0, true, true, true},
                                         {false, "relu", 0.2, false, true, true},
                                         {true, "gelu", 0.3, false, false, false}}) {
    INFO("normFirst ", c.normFirst, " ", c.act, " dropout ", c.dropout, " causal ", c.causal, " masks ", c.masks);
    nn::TransformerDecoderLayer m(4, 2, 6, c.dropout, c.act, c.batchFirst, c.normFirst);
    m.to(DType::Float64);
    m.setTgtIsCausal(c.causal);
    const int64_t T = 3, S = 4, B = 2;
    if (c.masks) {
      m.setMemoryKeyPaddingMask(from_vector<uint8_t>({0, 0, 0, 1, 0, 0, 1, 1}, {B, S}));
      m.setTgtKeyLengths(from_vector<int64_t>({3, 2}, {B}));
      m.setMemoryMask(uniform({T, S}, -1, 1, gen, DType::Float64));  // additive
    } else {
      m.setMemoryKeyLengths(from_vector<int64_t>({4, 2}, {B}));
    }
    GradCheckOptions o;
    o.tolerance = 1e-5;  // ReLU kinks are skipped; LayerNorm's rstd makes the second differences larger
    const Shape ts = c.batchFirst ? Shape{B, T, 4} : Shape{T, B, 4};
    const Shape ms = c.batchFirst ? Shape{B, S, 4} : Shape{S, B, 4};
    expect_gradients_ok(m, nn::Table{uniform(ts, -1, 1, gen, DType::Float64), uniform(ms, -1, 1, gen, DType::Float64)},
                        o);
  }
}

TEST_CASE("TransformerDecoderLayer: named children, switches, printing, errors") {
  nn::TransformerDecoderLayer m(8, 2, 16, 0.1, "gelu");
  std::vector<std::string> got;
  for (const auto& [k, _] : m.namedParameters()) got.push_back(k);
  CHECK(got == std::vector<std::string>{
                   "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                   "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
                   "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias",
                   "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
                   "norm3.weight", "norm3.bias"});
  CHECK(m.linear1().outputSize == 16);
  CHECK(m.norm3().normalizedShape == Shape{8});
  CHECK(m.usesTables());
  m.setTgtIsCausal(true);
  CHECK(m.selfAttn().causal);
  CHECK(m.tgtIsCausal());
  CHECK_FALSE(m.memoryIsCausal());
  m.setMemoryIsCausal(true);
  CHECK(m.multiheadAttn().causal);
  m.setMemoryIsCausal(false);
  const Tensor pad = from_vector<uint8_t>({0, 1}, {1, 2});
  m.setMemoryKeyPaddingMask(pad);
  CHECK(m.multiheadAttn().keyPaddingMask().is_same_view(pad));
  CHECK_FALSE(m.selfAttn().keyPaddingMask().defined());
  m.setTgtKeyPaddingMask(pad);
  CHECK(m.selfAttn().keyPaddingMask().is_same_view(pad));
  const Tensor mask = zeros({2, 2});
  m.setTgtMask(mask);
  m.setMemoryMask(mask.add(1));
  CHECK(m.selfAttn().attnMask().is_same_view(mask));
  CHECK(m.multiheadAttn().attnMask().defined());
  const Tensor len = from_vector<int64_t>({1}, {1});
  m.setTgtKeyLengths(len);
  m.setMemoryKeyLengths(len);
  CHECK(m.selfAttn().keyLengths().defined());
  CHECK(m.multiheadAttn().keyLengths().defined());
  CHECK(dynamic_cast<nn::GELU*>(m.get(nn::TransformerDecoderLayer::Act).get()) != nullptr);
  CHECK(m.str() ==
        "nn.TransformerDecoderLayer(8, nhead=2, dim_feedforward=16, dropout=0.1, gelu) {\n"
        "  (self_attn): nn.MultiheadAttention(8, heads=2, dropout=0.1, causal)\n"
        "  (multihead_attn): nn.MultiheadAttention(8, heads=2, dropout=0.1)\n"
        "  (linear1): nn.Linear(8 -> 16)\n"
        "  (dropout): nn.Dropout(0.100000)\n"
        "  (linear2): nn.Linear(16 -> 8)\n"
        "  (norm1): nn.LayerNorm([8], eps=1e-05)\n"
        "  (norm2): nn.LayerNorm([8], eps=1e-05)\n"
        "  (norm3): nn.LayerNorm([8], eps=1e-05)\n"
        "  (dropout1): nn.Dropout(0.100000)\n"
        "  (dropout2): nn.Dropout(0.100000)\n"
        "  (dropout3): nn.Dropout(0.100000)\n"
        "  (activation): nn.GELU\n"
        "}");

  nn::TransformerDecoderLayer k(8, 2, 16, 0.0);
  const Tensor tgt = zeros({3, 2, 8}), mem = zeros({4, 2, 8});
  CHECK_THROWS_WITH_AS(k.forward(tgt),
                       doctest::Contains("nn.TransformerDecoderLayer::updateOutput: takes or gives a "
                                         "table, not one tensor"),
                       Error);
  const char* contract =
      "nn.TransformerDecoderLayer::updateOutput: expected the table {tgt [T x B x 8], memory "
      "[S x B x 8]}";
  CHECK_THROWS_WITH_AS(k.forward(nn::Value(tgt)), doctest::Contains(contract), Error);
  CHECK_THROWS_WITH_AS(k.forward(nn::Table{tgt}), doctest::Contains(contract), Error);
  CHECK_THROWS_WITH_AS(k.forward(nn::Table{tgt, nn::Table{mem}}), doctest::Contains(contract), Error);
  CHECK_THROWS_WITH_AS(k.forward(nn::Table{zeros({3, 2, 6}), mem}),
                       "nn.TransformerDecoderLayer::updateOutput: expected the table {tgt [T x B x 8], memory "
                       "[S x B x 8]} of one batch, got {[3 x 2 x 6], [4 x 2 x 8]}",
                       Error);
  CHECK_THROWS_WITH_AS(k.forward(nn::Table{tgt, zeros({4, 3, 8})}),
                       doctest::Contains("of one batch, got {[3 x 2 x 8], "
                                         "[4 x 3 x 8]}"),
                       Error);
  CHECK_THROWS_WITH_AS(k.forward(nn::Table{tgt, zeros({4, 2, 8}, DType::Float64)}),
                       doctest::Contains("expected memory of tgt's dtype and device"), Error);
  CHECK_THROWS_WITH_AS(k.backward(nn::Table{tgt, mem}, zeros({3, 2, 8})),
                       "nn.TransformerDecoderLayer::backward: expected a forward() of input table {float32 [3 x 2 x "
                       "8] on cpu, float32 [4 x 2 x 8] on cpu} first",
                       Error);
  k.forward(nn::Table{tgt, mem});
  CHECK_THROWS_WITH_AS(k.backward(nn::Table{tgt, mem}, zeros({3, 2, 7})),
                       "nn.TransformerDecoderLayer::backward: expected gradOutput of tgt's shape [3 x 2 x 8], got "
                       "float32 [3 x 2 x 7] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(k.backward(nn::Table{tgt, mem}, nn::Table{zeros({3, 2, 8})}),
                       doctest::Contains("expected gradOutput of tgt's shape [3 x 2 x 8], got table"), Error);
  // a child's error is prefixed with its position, as every container's
  k.setMemoryKeyPaddingMask(from_vector<uint8_t>({0, 1, 0}, {1, 3}));
  CHECK_THROWS_WITH_AS(k.forward(nn::Table{tgt, mem}),
                       "In 2 module of nn.TransformerDecoderLayer: nn.MultiheadAttention::updateOutput: expected "
                       "key_padding_mask [2 x 4] (B x S), got [1 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(k.setTgtKeyPaddingMask(zeros({2, 3})),
                       doctest::Contains("nn.MultiheadAttention::setKeyPaddingMask: expected a uint8"), Error);

  CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer(8, 2, 16, 0.1, "tanh"),
                       "nn.TransformerDecoderLayer: expected activation 'relu' or 'gelu', got 'tanh'", Error);
  CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer(8, 3),
                       "nn.TransformerDecoderLayer: expected d_model >= 1 divisible by nhead >= 1, got d_model 8 and "
                       "nhead 3",
                       Error);
  CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer(8, 2, 0),
                       "nn.TransformerDecoderLayer: expected dim_feedforward >= 1, got 0", Error);
  CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer(8, 2, 16, 1.0),
                       "nn.TransformerDecoderLayer: expected dropout in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer(8, 2, 16, 0.1, "relu", false, false, -1.0),
                       "nn.TransformerDecoderLayer: expected a finite layer_norm_eps >= 0, got -1", Error);
  m.modules[nn::TransformerDecoderLayer::Norm3] = std::make_shared<nn::Linear>(8, 8);
  CHECK_THROWS_WITH_AS(m.norm3(), "nn.TransformerDecoderLayer::norm3: expected an nn.LayerNorm, got nn.Linear", Error);
  m.modules.pop_back();
  CHECK_THROWS_WITH_AS(m.forward(nn::Table{tgt, mem}),
                       "nn.TransformerDecoderLayer::updateOutput: expected 12 modules (self_attn ... activation), "
                       "got 11",
                       Error);
}

TEST_CASE("TransformerDecoderLayer: configuration, model-file and state round trips") {
  Generator gen(8);
  auto a = std::make_shared<nn::TransformerDecoderLayer>(8, 2, 12, 0.0, "gelu", true, true, 1e-6);
  a->setTgtIsCausal(true);
  std::vector<nn::ModulePtr> kids(a->modules.begin(), a->modules.end());
  auto c = nn::TransformerDecoderLayer::fromConfig(a->config(), kids);
  CHECK(c->str() == a->str());
  CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer::fromConfig(a->config(), {}),
                       "nn.TransformerDecoderLayer: expected 12 children, got 0", Error);

  TempDir dir("test_TransformerDecoderLayer");
  nn::save_model(*a, dir / "decoder");
  const nn::ModulePtr back = nn::load_model(dir / "decoder");
  REQUIRE(back->type_name() == "nn.TransformerDecoderLayer");
  auto& layer = dynamic_cast<nn::TransformerDecoderLayer&>(*back);
  CHECK(layer.tgtIsCausal());
  CHECK(layer.normFirst);
  CHECK(layer.batchFirst);
  CHECK(layer.layerNormEps == 1e-6);
  CHECK(back->str() == a->str());
  const nn::Value in = nn::Table{uniform({2, 3, 8}, -1, 1, gen), uniform({2, 5, 8}, -1, 1, gen)};
  const Tensor gy = uniform({2, 3, 8}, -1, 1, gen);
  CHECK(max_abs_diff(tensor_of(back->forward(in)), tensor_of(a->forward(in))) == 0);
  const nn::Value gb = back->backward(in, gy), ga = a->backward(in, gy);
  CHECK(max_abs_diff(tensor_of(gb[0]), tensor_of(ga[0])) == 0);
  CHECK(max_abs_diff(tensor_of(gb[1]), tensor_of(ga[1])) == 0);
}

TEST_CASE("TransformerDecoderLayer: separate passes, accumulation, no gradTgt and freed gradients") {
  Generator gen(20261203);
  for (bool normFirst : {false, true}) {
    INFO("normFirst ", normFirst);
    nn::TransformerDecoderLayer ref(8, 2, 12, 0.0, "gelu", true, normFirst),
        lean(8, 2, 12, 0.0, "gelu", true, normFirst);
    ref.to(DType::Float64);
    lean.to(DType::Float64);
    lean.loadStateDict(ref.stateDict());
    lean.setGradInputNeeded(false);
    lean.setFreeIntermediateGradients(true);
    const nn::Value in =
        nn::Table{uniform({2, 5, 8}, -1, 1, gen, DType::Float64), uniform({2, 4, 8}, -1, 1, gen, DType::Float64)};
    const Tensor gy = uniform({2, 5, 8}, -1, 1, gen, DType::Float64);
    for (int step = 0; step < 2; ++step) {  // the second step reuses the first's buffers
      ref.zeroGradParameters();
      lean.zeroGradParameters();
      CHECK(max_abs_diff(tensor_of(lean.forward(in)), tensor_of(ref.forward(in))) == 0);
      const nn::Value g = ref.backward(in, gy);
      const nn::Value& lg = lean.backward(in, gy);
      REQUIRE(lg.size() == 2);
      CHECK(lg[0].empty());
      CHECK(max_abs_diff(tensor_of(lg[1]), tensor_of(g[1])) < 1e-13);
      CHECK_FALSE(lean.get(normFirst ? nn::TransformerDecoderLayer::Norm1 : nn::TransformerDecoderLayer::SelfAttn)
                      ->gradInput.defined());
      const auto want = ref.namedGradParameters(), got = lean.namedGradParameters();
      REQUIRE(want.size() == got.size());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO(want[i].first);
        CHECK(max_abs_diff(got[i].second, want[i].second) < 1e-13);
      }
    }
    // updateGradInputValue then accGradParametersValue (scaled) = backward with that scale
    nn::TransformerDecoderLayer two(8, 2, 12, 0.0, "gelu", true, normFirst);
    two.to(DType::Float64);
    two.loadStateDict(ref.stateDict());
    two.zeroGradParameters();
    ref.zeroGradParameters();
    two.forward(in);
    ref.forward(in);
    const nn::Value g = ref.backward(in, gy, 0.5);
    const nn::Value gi = two.updateGradInputValue(in, gy);
    CHECK(max_abs_diff(tensor_of(gi[0]), tensor_of(g[0])) < 1e-13);
    CHECK(max_abs_diff(tensor_of(gi[1]), tensor_of(g[1])) < 1e-13);
    for (const auto& [name, grad] : two.namedGradParameters()) {
      INFO(name);
      CHECK(grad.norm() == 0);
    }
    two.accGradParametersValue(in, gy, 0.5);
    const auto want = ref.namedGradParameters(), got = two.namedGradParameters();
    for (size_t i = 0; i < want.size(); ++i) {
      INFO(want[i].first);
      CHECK(max_abs_diff(got[i].second, want[i].second) < 1e-13);
    }
    // a second backward accumulates
    ref.backward(in, gy, 0.5);
    for (const auto& named : ref.namedGradParameters()) {
      INFO(named.first);
      const auto it = std::find_if(got.begin(), got.end(), [&](const auto& p) { return p.first == named.first; });
      REQUIRE(it != got.end());
      CHECK(max_abs_diff(named.second, it->second.mul(2)) < 1e-12);
    }
  }
}

TEST_CASE("TransformerDecoderLayer: an empty batch") {
  nn::TransformerDecoderLayer m(8, 2, 12, 0.0);
  const nn::Value in = nn::Table{zeros({3, 0, 8}), zeros({4, 0, 8})};
  CHECK(tensor_of(m.forward(in)).sizes() == Shape{3, 0, 8});
  const nn::Value& g = m.backward(in, zeros({3, 0, 8}));
  CHECK(tensor_of(g[0]).sizes() == Shape{3, 0, 8});
  CHECK(tensor_of(g[1]).sizes() == Shape{4, 0, 8});
}
