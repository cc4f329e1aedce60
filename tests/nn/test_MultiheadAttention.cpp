// test_MultiheadAttention.cpp
#include <doctest/doctest.h>

#include "nn/ModuleConfig.h"
#include "nn/MultiheadAttention.h"
#include "tests/support/AddingChecks.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

namespace {

// PyTorch's module of case `name`, loaded into ours by its state_dict names
std::shared_ptr<nn::MultiheadAttention> torch_mha(const std::string& name, int64_t E, int64_t H, bool bias,
                                                  bool batchFirst) {
  auto m = std::make_shared<nn::MultiheadAttention>(E, H, 0.0, bias, batchFirst);
  m->to(DType::Float64);
  m->loadStateDict(torch_refs("mha." + name + ".p."));
  return m;
}

// scripts/make_mha_decoder_reference.py's tensors (its docstring lists the keys)
const std::map<std::string, Tensor>& decoder_refs() {
  static const std::map<std::string, Tensor> refs =
      load_safetensors(transformer_data("mha_decoder_reference.safetensors")).tensors;
  return refs;
}
Tensor dref(const std::string& key) {
  INFO("reference key ", key);
  REQUIRE(decoder_refs().count(key) == 1);
  return decoder_refs().at(key);
}
bool has_dref(const std::string& key) { return decoder_refs().count(key) == 1; }
std::map<std::string, Tensor> drefs(const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, v] : decoder_refs()) {
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  }
  return out;
}

nn::MultiheadAttentionOptions llama_options(int64_t kvHeads, double theta, bool causal) {
  nn::MultiheadAttentionOptions o;
  o.embedDim = 16;
  o.numHeads = 4;
  o.numKvHeads = kvHeads;
  o.bias = false;
  o.batchFirst = true;
  o.causal = causal;
  o.rotary = nn::RotaryOptions{nn::RotaryStyle::Half, theta, 0};
  return o;
}

}  // namespace

TEST_CASE("MultiheadAttention gives PyTorch's outputs and gradients (self, causal with padding, cross, batch first)") {
  struct Case {
    std::string name;
    int64_t E, H;
    bool bias, batchFirst, causal, lengths, memory;
  };
  for (const Case& c : std::vector<Case>{{"self", 8, 2, true, false, false, false, false},
                                         {"masked", 8, 4, true, false, true, true, false},
                                         {"cross", 8, 2, true, false, false, true, true},
                                         {"batch_first", 6, 3, false, true, false, false, false}}) {
    INFO(c.name);
    const std::string p = "mha." + c.name;
    auto m = torch_mha(c.name, c.E, c.H, c.bias, c.batchFirst);
    m->causal = c.causal;
    if (c.lengths) m->setKeyLengths(torch_ref(p + ".lengths"));
    if (c.memory) m->setMemory(torch_ref(p + ".memory"));
    const Tensor x = torch_ref(p + ".x");
    expect_matches("output", m->forward(x), torch_ref(p + ".y"));
    expect_matches("gradInput", m->backward(x, torch_ref(p + ".gy")), torch_ref(p + ".gx"));
    if (c.memory) expect_matches("gradMemory", m->gradMemory, torch_ref(p + ".gmemory"));
    for (const auto& [name, g] : m->namedGradParameters()) {
      INFO(name);
      expect_matches("parameter gradient", g, torch_ref(p + ".g." + name));
    }
  }
}

TEST_CASE("MultiheadAttention state_dict names and shapes are PyTorch's") {
  nn::MultiheadAttention m(12, 3);
  const auto state = m.stateDict();
  REQUIRE(state.size() == 4);
  CHECK(state.at("in_proj_weight").sizes() == Shape{36, 12});
  CHECK(state.at("in_proj_bias").sizes() == Shape{36});
  CHECK(state.at("out_proj.weight").sizes() == Shape{12, 12});
  CHECK(state.at("out_proj.bias").sizes() == Shape{12});
  CHECK(state.at("in_proj_bias").abs().sum().item() == 0);  // PyTorch zeroes the biases
  CHECK(nn::MultiheadAttention(4, 2, 0, false).stateDict().size() == 2);
}

TEST_CASE("MultiheadAttention finite differences: heads, causal, key lengths, dropout, batch first, no bias") {
  Generator gen(20261128);
  struct Case {
    int64_t E, H;
    double dropout;
    bool bias, batchFirst, causal;
    std::vector<int64_t> lengths;
  };
  for (const Case& c : std::vector<Case>{{4, 1, 0, true, false, false, {}},
                                         {6, 3, 0, true, false, true, {}},
                                         {4, 2, 0, false, true, false, {3, 1}},
                                         {4, 2, 0.3, true, false, true, {2, 3}}}) {
    INFO("E ", c.E, " H ", c.H, " dropout ", c.dropout, " causal ", c.causal);
    nn::MultiheadAttention m(c.E, c.H, c.dropout, c.bias, c.batchFirst);
    m.to(DType::Float64);
    m.causal = c.causal;
    if (!c.lengths.empty()) m.setKeyLengths(from_vector<int64_t>(c.lengths, {2}));
    if (c.bias) m.inProjBias.uniform_(-0.5, 0.5, gen);
    expect_gradients_ok(m, uniform(c.batchFirst ? Shape{2, 3, c.E} : Shape{3, 2, c.E}, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("MultiheadAttention cross-attention: finite differences over the query, the parameters and the memory") {
  Generator gen(20261129);
  nn::MultiheadAttention m(4, 2);
  m.to(DType::Float64);
  m.inProjBias.uniform_(-0.5, 0.5, gen);
  const Tensor mem = uniform({5, 2, 4}, -1, 1, gen, DType::Float64);
  m.setMemory(mem);
  m.setKeyLengths(from_vector<int64_t>({5, 3}, {2}));
  const Tensor x = uniform({3, 2, 4}, -1, 1, gen, DType::Float64);
  expect_gradients_ok(m, x);
  // the memory's gradient, entry by entry
  const Tensor r = uniform({3, 2, 4}, -1, 1, gen, DType::Float64);
  m.forward(x);
  m.backward(x, r);
  REQUIRE(m.gradMemory.sizes() == mem.sizes());
  const Tensor gm = m.gradMemory.clone();
  Tensor flat = mem.view({-1});
  double worst = 0;
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double v = flat.get({i}), eps = 1e-6;
    flat.set({i}, v + eps);
    const double up = m.forward(x).mul(r).sum().item();
    flat.set({i}, v - eps);
    const double down = m.forward(x).mul(r).sum().item();
    flat.set({i}, v);
    worst = std::max(worst, std::abs((up - down) / (2 * eps) - gm.view({-1}).get({i})));
  }
  CHECK(worst < 1e-8);
  // back to self-attention
  m.setMemory(Tensor());
  m.setKeyLengths(Tensor());
  m.forward(x);
  m.backward(x, r);
  CHECK_FALSE(m.gradMemory.defined());
}

TEST_CASE("MultiheadAttention errors, printing, configuration") {
  CHECK_THROWS_WITH_AS(
      nn::MultiheadAttention(10, 3),
      "nn.MultiheadAttention: expected embed_dim >= 1 divisible by num_heads >= 1, got embed_dim 10 and "
      "num_heads 3",
      Error);
  CHECK_THROWS_WITH_AS(nn::MultiheadAttention(8, 2, 1.0), "nn.MultiheadAttention: expected dropout in [0, 1), got 1",
                       Error);
  nn::MultiheadAttention m(8, 2);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 2, 6})),
                       "nn.MultiheadAttention::updateOutput: expected input [S x B x 8], got [3 x 2 x 6]", Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 8})),
                       "nn.MultiheadAttention::updateOutput: expected input [S x B x 8], got [3 x 8]", Error);
  m.setMemory(zeros({4, 3, 8}));
  CHECK_THROWS_WITH_AS(
      m.forward(zeros({3, 2, 8})),
      "nn.MultiheadAttention::updateOutput: expected memory [S x B x 8] with batch 2 and dtype float32 "
      "(input [3 x 2 x 8]), got float32 [4 x 3 x 8] on cpu",
      Error);
  m.setMemory(Tensor());
  m.setKeyLengths(from_vector<int64_t>({3, 4}, {2}));
  CHECK_THROWS_WITH_AS(
      m.forward(zeros({3, 2, 8})),
      "nn.MultiheadAttention::updateOutput: expected keyLengths in [1, 3] (Sk of k [2 x 2 x 3 x 4]), got "
      "4 at batch entry 1",
      Error);
  CHECK_THROWS_WITH_AS(
      m.setKeyLengths(zeros({2})),
      "nn.MultiheadAttention::setKeyLengths: expected int64 [batch] key lengths, got float32 [2] on cpu", Error);
  nn::MultiheadAttention fresh(8, 2);
  fresh.forward(zeros({3, 2, 8}));
  CHECK_THROWS_WITH_AS(fresh.accGradParameters(zeros({3, 2, 8}), zeros({3, 2, 8})),
                       "nn.MultiheadAttention::accGradParameters: expected updateGradInput() after the forward first "
                       "(backward() calls both), got none",
                       Error);
  CHECK(nn::MultiheadAttention(8, 2).str() == "nn.MultiheadAttention(8, heads=2)");
  nn::MultiheadAttention o(8, 4, 0.1, false, true);
  o.causal = true;
  CHECK(o.str() == "nn.MultiheadAttention(8, heads=4, dropout=0.1, without bias, batch_first, causal)");
  CHECK(nn::MultiheadAttention::fromConfig(o.config())->str() == o.str());
}

TEST_CASE("MultiheadAttention: num_heads and the memory changed by hand are named, not a view's error") {
  Generator gen(45);
  nn::MultiheadAttention m(8, 2);
  const Tensor x = uniform({3, 2, 8}, -1, 1, gen);
  const Tensor g = uniform({3, 2, 8}, -1, 1, gen);
  // num_heads is a public field: one that does not divide embed_dim, on every pass
  m.numHeads = 3;
  CHECK_THROWS_WITH_AS(m.forward(x),
                       "nn.MultiheadAttention::updateOutput: expected embed_dim >= 1 divisible by num_heads >= 1, got "
                       "embed_dim 8 and num_heads 3",
                       Error);
  m.numHeads = 0;
  CHECK_THROWS_WITH_AS(m.forward(x), doctest::Contains("got embed_dim 8 and num_heads 0"), Error);
  m.numHeads = 2;
  m.forward(x);
  m.numHeads = 3;
  CHECK_THROWS_WITH_AS(m.backward(x, g),
                       "nn.MultiheadAttention::updateGradInput: expected embed_dim >= 1 divisible by num_heads >= 1, "
                       "got embed_dim 8 and num_heads 3",
                       Error);
  // one that divides it, but is not the forward's: what the forward kept has the old heads
  m.numHeads = 4;
  CHECK_THROWS_WITH_AS(m.backward(x, g),
                       "nn.MultiheadAttention::updateGradInput: expected num_heads 2 as in the forward, got 4 "
                       "(num_heads changed between forward and backward)",
                       Error);
  // a new forward with 4 heads is fine
  CHECK(m.forward(x).sizes() == x.sizes());
  CHECK_NOTHROW(m.backward(x, g));
  // setMemory with another length between forward and backward
  m.numHeads = 2;
  m.setMemory(uniform({5, 2, 8}, -1, 1, gen));
  m.forward(x);
  m.setMemory(uniform({7, 2, 8}, -1, 1, gen));
  CHECK_THROWS_WITH_AS(m.backward(x, g),
                       "nn.MultiheadAttention::updateGradInput: expected the forward's memory [5 x 2 x 8], got "
                       "[7 x 2 x 8] (setMemory() between forward and backward)",
                       Error);
  nn::MultiheadAttention bf(8, 2, 0.0, true, true);  // batch first: [B x Sk x E]
  const Tensor xb = uniform({2, 3, 8}, -1, 1, gen);
  bf.setMemory(uniform({2, 5, 8}, -1, 1, gen));
  bf.forward(xb);
  bf.setMemory(uniform({2, 4, 8}, -1, 1, gen));
  CHECK_THROWS_WITH_AS(bf.backward(xb, g.permute({1, 0, 2}).contiguous()),
                       "nn.MultiheadAttention::updateGradInput: expected the forward's memory [2 x 5 x 8], got "
                       "[2 x 4 x 8] (setMemory() between forward and backward)",
                       Error);
  // the same length again: backward as usual
  m.setMemory(uniform({5, 2, 8}, -1, 1, gen));
  m.forward(x);
  m.setMemory(uniform({5, 2, 8}, -1, 1, gen));
  CHECK_NOTHROW(m.backward(x, g));
  CHECK(m.gradMemory.sizes() == Shape{5, 2, 8});
  // an empty batch with a memory: the memory's length comes from the memory (no division by B)
  nn::MultiheadAttention e(8, 2);
  e.setMemory(zeros({5, 0, 8}));
  CHECK(e.forward(zeros({3, 0, 8})).sizes() == Shape{3, 0, 8});
  CHECK(e.backward(zeros({3, 0, 8}), zeros({3, 0, 8})).sizes() == Shape{3, 0, 8});
  CHECK(e.gradMemory.sizes() == Shape{5, 0, 8});
}

namespace {
// What the cuDNN twin does: overrides the primitives alone. Counts the calls and routes them
// to the CPU defaults, so every piece of compute must go through them.
struct CountingAttention : nn::MultiheadAttention {
  using nn::MultiheadAttention::MultiheadAttention;
  int linears = 0, gradInputs = 0, gradParameters = 0, attentions = 0, attentionBackwards = 0;
  void linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& out) override {
    ++linears;
    CHECK(x.is_contiguous());
    CHECK(w.is_contiguous());
    nn::MultiheadAttention::linear(x, w, b, out);
  }
  void linearGradInput(const Tensor& gy, const Tensor& w, Tensor& gx) override {
    ++gradInputs;
    nn::MultiheadAttention::linearGradInput(gy, w, gx);
  }
  void linearGradParameters(const Tensor& x, const Tensor& gy, Tensor& gw, Tensor& gb, double scale) override {
    ++gradParameters;
    nn::MultiheadAttention::linearGradParameters(x, gy, gw, gb, scale);
  }
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const nn::SdpaOptions& o, nn::SdpaSaved& s,
                 Tensor out) override {
    ++attentions;
    nn::MultiheadAttention::attention(q, k, v, o, s, out);
  }
  void attentionBackward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& g,
                         const nn::SdpaOptions& o, const nn::SdpaSaved& s, nn::SdpaGrads into) override {
    ++attentionBackwards;
    nn::MultiheadAttention::attentionBackward(q, k, v, out, g, o, s, into);
  }
};
}  // namespace

TEST_CASE("MultiheadAttention computes through its primitives alone (what the cuDNN twin overrides)") {
  Generator gen(31);
  CountingAttention m(4, 2);
  const Tensor x = uniform({3, 2, 4}, -1, 1, gen);
  m.forward(x);
  m.backward(x, uniform({3, 2, 4}, -1, 1, gen));
  CHECK(m.linears == 2);  // the stacked q, k, v projection and the output projection
  CHECK(m.attentions == 1);
  CHECK(m.gradInputs == 2);
  CHECK(m.gradParameters == 2);
  CHECK(m.attentionBackwards == 1);
  CountingAttention c(4, 2);
  c.setMemory(uniform({5, 2, 4}, -1, 1, gen));
  c.forward(x);
  c.backward(x, uniform({3, 2, 4}, -1, 1, gen));
  CHECK(c.linears == 3);  // q from the input, k and v from the memory, the output
  CHECK(c.gradInputs == 3);
  CHECK(c.gradParameters == 3);
  // without gradInput the input's gradient GEMM is skipped, the parameters' gradients are not
  CountingAttention n(4, 2);
  n.setGradInputNeeded(false);
  n.forward(x);
  CHECK_FALSE(n.backward(x, uniform({3, 2, 4}, -1, 1, gen)).defined());
  CHECK(n.gradInputs == 1);  // the output projection's, into the attention
  CHECK(n.gradParameters == 2);
  CHECK(n.gradInProjWeight.norm() > 0);
}

TEST_CASE("MultiheadAttention with GQA and RoPE gives Hugging Face LlamaAttention's outputs and gradients") {
  struct Case {
    std::string name;
    int64_t kvHeads;
    double theta;
    bool causal;
  };
  for (const Case& c : std::vector<Case>{
           {"llama_gqa", 2, 10000, true}, {"llama_gqa_kpm", 2, 10000, true}, {"llama_mqa", 1, 500000, false}}) {
    INFO(c.name);
    nn::MultiheadAttention m(llama_options(c.kvHeads, c.theta, c.causal));
    m.to(DType::Float64);
    m.loadStateDict(drefs(c.name + ".p."));
    CHECK(m.inProjWeight.sizes() == Shape{(4 + 2 * c.kvHeads) * 4, 16});
    if (has_dref(c.name + ".kpm")) m.setKeyPaddingMask(dref(c.name + ".kpm"));
    const Tensor x = dref(c.name + ".x");
    expect_matches("output", m.forward(x), dref(c.name + ".y"), 1e-11);
    expect_matches("gradInput", m.backward(x, dref(c.name + ".gy")), dref(c.name + ".gx"), 1e-11);
    for (const auto& [name, g] : m.namedGradParameters()) {
      INFO(name);
      expect_matches("parameter gradient", g, dref(c.name + ".g." + name), 1e-11);
    }
  }
}

TEST_CASE("MultiheadAttention's attn_mask and key_padding_mask give PyTorch's (bool, additive, 2-, 3- and 4-d)") {
  for (const std::string name : {"amask_bool", "amask_add3", "amask4", "kpm", "both", "both_add"}) {
    INFO(name);
    nn::MultiheadAttention m(8, 2);
    m.to(DType::Float64);
    m.loadStateDict(drefs(name + ".p."));
    if (has_dref(name + ".attn_mask")) m.setAttnMask(dref(name + ".attn_mask"));
    if (has_dref(name + ".kpm")) m.setKeyPaddingMask(dref(name + ".kpm"));
    const Tensor x = dref(name + ".x");
    expect_matches("output", m.forward(x), dref(name + ".y"), 1e-11);
    expect_matches("gradInput", m.backward(x, dref(name + ".gy")), dref(name + ".gx"), 1e-11);
    for (const auto& [pname, g] : m.namedGradParameters()) {
      INFO(pname);
      expect_matches("parameter gradient", g, dref(name + ".g." + pname), 1e-11);
    }
  }
}

TEST_CASE("MultiheadAttention finite differences: GQA and MQA with RoPE, masks, padding, cross-attention") {
  Generator gen(20261202);
  struct Case {
    int64_t kvHeads;
    bool rope, interleaved, causal, boolMask, addMask, kpm, batchFirst;
  };
  for (const Case& c : std::vector<Case>{{2, true, false, true, false, false, false, true},
                                         {1, true, true, false, true, false, true, false},
                                         {2, true, false, false, false, true, true, true},
                                         {4, false, false, true, false, false, true, false},
                                         {1, false, false, false, true, true, false, true}}) {
    INFO("kv heads ", c.kvHeads, c.rope ? " rope" : "", c.causal ? " causal" : "", c.boolMask ? " bool mask" : "",
         c.addMask ? " additive mask" : "", c.kpm ? " kpm" : "");
    nn::MultiheadAttentionOptions o;
    o.embedDim = 8;
    o.numHeads = 4;
    o.numKvHeads = c.kvHeads;
    o.batchFirst = c.batchFirst;
    o.causal = c.causal;
    if (c.rope)
      o.rotary = nn::RotaryOptions{c.interleaved ? nn::RotaryStyle::Interleaved : nn::RotaryStyle::Half, 100, 0};
    nn::MultiheadAttention m(o);
    m.to(DType::Float64);
    m.inProjBias.uniform_(-0.5, 0.5, gen);
    const int64_t B = 2, S = 4;
    if (c.boolMask) m.setAttnMask(from_vector<uint8_t>({0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0}, {S, S}));
    if (c.addMask) {
      Tensor a = uniform({B * 4, S, S}, -1, 1, gen, DType::Float64);
      a.set({1, 2, 0}, -INFINITY);
      if (c.boolMask) {  // both: the boolean one goes, the additive one stays (another key per row)
        m.setAttnMask(a);
      } else {
        m.setAttnMask(a);
      }
    }
    if (c.kpm) m.setKeyPaddingMask(from_vector<uint8_t>({0, 0, 1, 0, 0, 1, 0, 0}, {B, S}));
    expect_gradients_ok(m, uniform(c.batchFirst ? Shape{B, S, 8} : Shape{S, B, 8}, -1, 1, gen, DType::Float64));
  }
  // cross-attention with grouped kv heads and a padding mask over the memory
  nn::MultiheadAttentionOptions o;
  o.embedDim = 8;
  o.numHeads = 4;
  o.numKvHeads = 2;
  nn::MultiheadAttention m(o);
  m.to(DType::Float64);
  m.inProjBias.uniform_(-0.5, 0.5, gen);
  m.setMemory(uniform({5, 2, 8}, -1, 1, gen, DType::Float64));
  m.setKeyPaddingMask(from_vector<uint8_t>({0, 1, 0, 0, 1, 0, 0, 0, 1, 0}, {2, 5}));
  expect_gradients_ok(m, uniform({3, 2, 8}, -1, 1, gen, DType::Float64));
}

TEST_CASE("MultiheadAttention with num_kv_heads == num_heads and no rotary is PyTorch's module") {
  Generator gen(5);
  nn::MultiheadAttentionOptions o;
  o.embedDim = 8;
  o.numHeads = 2;
  o.numKvHeads = 2;
  nn::MultiheadAttention a(o), b(8, 2);
  CHECK(a.stateDict().at("in_proj_weight").sizes() == Shape{24, 8});
  b.loadStateDict(a.stateDict());
  const Tensor x = uniform({3, 2, 8}, -1, 1, gen);
  CHECK(max_abs_diff(a.forward(x), b.forward(x)) == 0);
  CHECK(a.str() == "nn.MultiheadAttention(8, heads=2)");
}

TEST_CASE("MultiheadAttention decoder options: errors, printing, configuration, old configurations") {
  nn::MultiheadAttentionOptions o;
  o.embedDim = 16;
  o.numHeads = 4;
  o.numKvHeads = 3;
  CHECK_THROWS_WITH_AS(nn::MultiheadAttention{o},
                       "nn.MultiheadAttention: expected embed_dim >= 1 divisible by num_heads >= 1 and num_kv_heads >= "
                       "0 dividing num_heads, got embed_dim 16 and num_heads 4 and num_kv_heads 3",
                       Error);
  o.numKvHeads = 2;
  o.rotary = nn::RotaryOptions{nn::RotaryStyle::Half, 10000, 6};
  CHECK_THROWS_WITH_AS(nn::MultiheadAttention{o}, doctest::Contains("nn.MultiheadAttention: "), Error);
  o.rotary->rotaryDim = 2;
  o.batchFirst = true;
  o.causal = true;
  o.bias = false;
  nn::MultiheadAttention m(o);
  CHECK(m.str() ==
        "nn.MultiheadAttention(16, heads=4, kv_heads=2, rotary(half, theta=10000, rotary_dim=2), without bias, "
        "batch_first, causal)");
  CHECK(m.inProjWeight.sizes() == Shape{32, 16});
  auto back = nn::MultiheadAttention::fromConfig(m.config());
  CHECK(back->str() == m.str());
  CHECK(back->stateDict().at("in_proj_weight").sizes() == Shape{32, 16});
  // a configuration written before num_kv_heads and rotary existed
  const tensor::Json old =
      tensor::Json::Object{{"embed_dim", int64_t{8}}, {"num_heads", int64_t{2}}, {"dropout", 0.0}, {"bias", true},
                           {"batch_first", false},    {"causal", false}};
  CHECK(nn::MultiheadAttention::fromConfig(old)->str() == "nn.MultiheadAttention(8, heads=2)");
  // num_kv_heads changed by hand: the parameters' shapes are named
  m.numKvHeads = 4;
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 16})),
                       doctest::Contains("nn.MultiheadAttention::updateOutput: expected in_proj_weight of [48 x 16]"),
                       Error);
  m.numKvHeads = 2;
  // masks: dtype and rank when set, shapes against the input on every pass
  CHECK_THROWS_WITH_AS(m.setAttnMask(zeros({3}, DType::Int64)),
                       "nn.MultiheadAttention::setAttnMask: expected a uint8 (nonzero = not allowed) or floating "
                       "(additive) attn_mask [T x S], [B*H x T x S] or [B x H x T x S], got int64 [3] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(
      m.setKeyPaddingMask(zeros({2, 3})),
      "nn.MultiheadAttention::setKeyPaddingMask: expected a uint8 key_padding_mask [B x S] (nonzero = ignore), got "
      "float32 [2 x 3] on cpu",
      Error);
  m.setAttnMask(zeros({3, 4}, DType::UInt8));
  CHECK_THROWS_WITH_AS(
      m.forward(zeros({2, 3, 16})),
      "nn.MultiheadAttention::updateOutput: expected attn_mask [3 x 3], [8 x 3 x 3] or [2 x 4 x 3 x 3] "
      "(T x S, B*H x T x S, B x H x T x S), got [3 x 4]",
      Error);
  m.setAttnMask(Tensor());
  m.setKeyPaddingMask(zeros({3, 3}, DType::UInt8));
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 16})),
                       "nn.MultiheadAttention::updateOutput: expected key_padding_mask [2 x 3] (B x S), got [3 x 3]",
                       Error);
  m.setKeyPaddingMask(Tensor());
  CHECK(m.forward(zeros({2, 3, 16})).sizes() == Shape{2, 3, 16});
  // num_kv_heads changed between forward and backward
  nn::MultiheadAttention g(o);
  const Tensor x = zeros({2, 3, 16});
  g.forward(x);
  g.numKvHeads = 1;
  g.inProjWeight = zeros({24, 16});
  g.gradInProjWeight = zeros({24, 16});
  CHECK_THROWS_WITH_AS(g.backward(x, x),
                       "nn.MultiheadAttention::updateGradInput: expected num_kv_heads 2 as in the forward, got 1 "
                       "(num_kv_heads changed between forward and backward)",
                       Error);
}

TEST_CASE("MultiheadAttention forwardAdding: the attention + addend bit for bit, the same gradients") {
  Generator gen(31);
  for (bool batchFirst : {false, true}) {
    nn::MultiheadAttentionOptions o;
    o.embedDim = 8, o.numHeads = 2, o.numKvHeads = 1, o.batchFirst = batchFirst, o.causal = true;
    nn::MultiheadAttention m(o);
    m.to(DType::Float64);
    INFO((batchFirst ? "batch first" : "sequence first"));
    expect_adding_exact(m, uniform({3, 2, 8}, -1, 1, gen, DType::Float64));
    CHECK_THROWS_WITH_AS(m.forwardAdding(zeros({3, 2, 8}, DType::Float64), zeros({2, 3, 8}, DType::Float64)),
                         "nn.MultiheadAttention::forwardAdding: expected a contiguous addend [3 x 2 x 8] of float64 on "
                         "cpu, got float64 [2 x 3 x 8] on cpu",
                         Error);
    // the addend is the call's alone: a later plain forward adds nothing
    const Tensor x = uniform({3, 2, 8}, -1, 1, gen, DType::Float64);
    const Tensor plain = m.forward(x).clone();
    m.forwardAdding(x, ones({3, 2, 8}, DType::Float64));
    CHECK(max_abs_diff(m.forward(x), plain) == 0);
  }
}