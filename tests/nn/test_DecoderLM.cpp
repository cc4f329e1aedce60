// test_DecoderLM.cpp: DecoderBlock, DecoderLM, the KV-cached forward and generation, the sampler.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "convert/ModelFile.h"
#include "nn/DecoderBlock.h"
#include "nn/DecoderLM.h"
#include "nn/Embedding.h"
#include "nn/Generation.h"
#include "nn/KVCache.h"
#include "nn/Linear.h"
#include "nn/MultiheadAttention.h"
#include "nn/Sequential.h"
#include "tests/support/ErrorText.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TempDir.h"

using namespace tensor;
using namespace testing;

namespace {

nn::DecoderLMConfig tiny(nn::DecoderKind kind, bool tied = true) {
  nn::DecoderLMConfig c;
  c.kind = kind;
  c.vocabSize = 13;
  c.nPositions = 16;
  c.nEmbd = 8;
  c.nLayer = 2;
  c.nHead = 2;
  c.nKvHead = kind == nn::DecoderKind::Llama ? 1 : 0;
  c.intermediateSize = kind == nn::DecoderKind::Llama ? 12 : 0;
  c.normEps = 1e-5;
  c.ropeTheta = 100;
  c.tied = tied;
  return c;
}

std::shared_ptr<nn::DecoderLM> make(const nn::DecoderLMConfig& c) {
  return c.kind == nn::DecoderKind::GPT2 ? nn::make_gpt2(c) : nn::make_llama(c);
}

Tensor tokens(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return from_vector(flat, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())});
}

// the logits of one row's sequence, recomputed from scratch (no cache)
Tensor full_logits(nn::DecoderLM& m, const std::vector<int64_t>& seq) { return m.forward(tokens({seq})).clone(); }

const nn::DecoderKind kKinds[] = {nn::DecoderKind::GPT2, nn::DecoderKind::Llama};

}  // namespace

TEST_CASE("DecoderBlock finite differences, GPT-2 (LayerNorm, GELU tanh) and Llama (RMSNorm, RoPE, GQA, SwiGLU)") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    manual_seed(3);
    auto lm = make(tiny(kind));
    nn::ModulePtr block = lm->blocks().get(0);
    block->to(DType::Float64);
    Generator gen(48);
    GradCheckOptions o;
    o.tolerance = 1e-5;
    expect_gradients_ok(*block, uniform({2, 3, 8}, -1, 1, gen, DType::Float64), o);
    expect_accumulation_ok(*block, uniform({2, 3, 8}, -1, 1, gen, DType::Float32).to(DType::Float64));
    expect_prints_type(*block);
    CHECK(block->str().find("(ln_1)") != std::string::npos);
    CHECK(block->str().find("(mlp)") != std::string::npos);
  }
}

TEST_CASE("DecoderLM's parameter gradients by finite differences, tied and untied, both kinds") {
  for (nn::DecoderKind kind : kKinds) {
    for (bool tied : {true, false}) {
      INFO(nn::decoder_kind_name(kind), " tied ", tied);
      manual_seed(5);
      auto lm = make(tiny(kind, tied));
      lm->to(DType::Float64);
      CHECK(lm->tiedParameters().size() == (tied ? 1u : 0u));
      GradCheckOptions o;
      o.tolerance = 1e-5;
      o.check_input = false;
      o.max_samples = 40;
      expect_gradients_ok(*lm, tokens({{1, 5, 12, 0}, {7, 7, 3, 2}}), o);
      CHECK_FALSE(lm->gradInput.defined());
    }
  }
}

TEST_CASE("DecoderLM's state paths are GPT-2's and Llama's module names; a tied head is wte's tensor") {
  auto gpt2 = nn::make_gpt2(tiny(nn::DecoderKind::GPT2));
  const auto s = gpt2->stateDict();
  for (const char* k :
       {"wte.weight", "wpe.weight", "h.0.ln_1.weight", "h.0.attn.in_proj_weight", "h.1.attn.out_proj.bias",
        "h.1.mlp.0.weight", "h.1.mlp.2.bias", "ln_f.bias", "lm_head.weight"}) {
    INFO(k);
    CHECK(s.count(k) == 1);
  }
  CHECK(gpt2->lmHead().weight.is_same_view(gpt2->wte().weight));
  auto llama = nn::make_llama(tiny(nn::DecoderKind::Llama, false));
  const auto l = llama->stateDict();
  for (const char* k : {"wte.weight", "h.0.ln_1.weight", "h.0.attn.in_proj_weight", "h.0.attn.out_proj.weight",
                        "h.1.mlp.gate_proj.weight", "h.1.mlp.down_proj.weight", "ln_f.weight", "lm_head.weight"}) {
    INFO(k);
    CHECK(l.count(k) == 1);
  }
  CHECK(l.count("wpe.weight") == 0);
  CHECK(l.at("h.0.attn.in_proj_weight").sizes() == Shape{8 + 2 * 4, 8});  // 2 q heads, 1 kv head, head size 4
  CHECK_FALSE(llama->lmHead().weight.is_same_view(llama->wte().weight));
  CHECK(has(gpt2->str(), "nn.DecoderLM(gpt2, vocab=13"));
}

TEST_CASE("a cached forward gives the full recomputation's logits: prefill, then one token a step, ragged rows") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    manual_seed(11);
    auto m = make(tiny(kind));
    m->evaluate();
    const std::vector<std::vector<int64_t>> seqs = {{3, 1, 4, 1, 5, 9, 2}, {6, 5, 3, 5, 8, 9, 7}};
    std::vector<Tensor> full;
    for (const auto& s : seqs) full.push_back(full_logits(*m, s));
    const std::vector<int64_t> prompt = {4, 2};  // row 0's prompt has 4 tokens, row 1's 2
    auto cache = std::make_shared<nn::KVCache>(2, 2, tiny(kind).kvHeads(), 16, 4, DType::Float32, Device::cpu());
    m->setCache(cache);
    // right-padded prefill of [2 x 4]
    const Tensor pre = m->forward(tokens({{3, 1, 4, 1}, {6, 5, 0, 0}})).clone();
    CHECK(cache->hostLengths() == std::vector<int64_t>{4, 4});
    cache->setLengths(prompt);
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t s = 0; s < prompt[b]; ++s) {
        CHECK(max_abs_diff(pre.select(0, b).select(0, s), full[b].select(0, 0).select(0, s)) < 1e-5);
      }
    }
    // then one token a step: row b's next real token at position prompt[b] + step
    for (int64_t step = 0; step < 3; ++step) {
      const Tensor next = tokens({{seqs[0][prompt[0] + step]}, {seqs[1][prompt[1] + step]}});
      const Tensor logits = m->forward(next).clone();
      REQUIRE(logits.sizes() == Shape{2, 1, 13});
      for (int64_t b = 0; b < 2; ++b) {
        INFO("step ", step, " row ", b);
        CHECK(max_abs_diff(logits.select(0, b).select(0, 0), full[b].select(0, 0).select(0, prompt[b] + step)) < 1e-5);
      }
    }
    CHECK(cache->hostLengths() == std::vector<int64_t>{7, 5});
    // a cached forward is a generation step: backward refuses
    CHECK_THROWS(m->backward(tokens({{1}, {2}}), zeros({2, 1, 13})));
    m->setCache(nullptr);
    CHECK(max_abs_diff(m->forward(tokens({seqs[0]})), full[0]) == 0);
  }
}

TEST_CASE("forwardRows: the picked positions' logits of the full forward, bad rows refused before a cache moves") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    manual_seed(13);
    auto m = make(tiny(kind));
    m->evaluate();
    const Tensor t = tokens({{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}});
    const Tensor full = m->forward(t).clone().reshape({10, 13});
    const std::vector<int64_t> picks = {4, 6, 0, 9, 4};  // any order, repeats allowed
    const Tensor rows = from_vector(picks, {5});
    const Tensor got = m->forwardRows(t, rows).clone();
    REQUIRE(got.sizes() == Shape{5, 13});
    // the same computation on fewer rows: bit for bit where the BLAS computes a row alike at any
    // number of rows (OpenBLAS's Haswell and SkylakeX kernels), within float32 rounding where it
    // does not (its Zen kernels: 1-3e-8 here)
    for (int64_t i = 0; i < 5; ++i) {
      INFO("row ", picks[i]);
      CHECK(max_abs_diff(got.select(0, i), full.select(0, picks[i])) < 1e-6);
    }
    // no backward from a forwardRows
    CHECK_THROWS(m->backward(t, zeros({2, 5, 13})));
    auto cache = std::make_shared<nn::KVCache>(2, 2, tiny(kind).kvHeads(), 16, 4, DType::Float32, Device::cpu());
    m->setCache(cache);
    CHECK_THROWS_WITH_AS(m->forwardRows(t, from_vector<int64_t>({10}, {1})),
                         doctest::Contains("row 10 is outside the 10 positions"), std::exception);
    CHECK_THROWS_WITH_AS(m->forwardRows(t, from_vector<int64_t>({-1}, {1})), doctest::Contains("row -1"),
                         std::exception);
    CHECK_THROWS_WITH_AS(m->forwardRows(t, from_vector<double>({1}, {1})), doctest::Contains("int64 [N]"),
                         std::exception);
    CHECK(cache->hostLengths() == std::vector<int64_t>{0, 0});  // nothing written
    m->forwardRows(t, rows);
    CHECK(cache->hostLengths() == std::vector<int64_t>{5, 5});
    m->setCache(nullptr);
  }
}

TEST_CASE("greedy generation is the argmax of the full recomputation, per row, with stop tokens") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    manual_seed(17);
    auto m = make(tiny(kind));
    const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3, 4, 5}, {7}, {9, 8}};
    nn::GenerationOptions o;
    o.maxNewTokens = 6;
    const auto got = nn::generate(*m, prompts, o);
    REQUIRE(got.size() == 3);
    CHECK(m->isTraining());  // mode and cache as they were
    CHECK(m->cache() == nullptr);
    m->evaluate();
    for (size_t b = 0; b < prompts.size(); ++b) {
      std::vector<int64_t> seq = prompts[b];
      std::vector<int64_t> want;
      for (int64_t i = 0; i < o.maxNewTokens; ++i) {
        const Tensor l = full_logits(*m, seq);
        const int64_t t =
            static_cast<int64_t>(l.select(0, 0).select(0, static_cast<int64_t>(seq.size()) - 1).argmax(0).item());
        want.push_back(t);
        seq.push_back(t);
      }
      INFO("row ", b);
      CHECK(got[b] == want);
    }
    // a stop token ends its row there (and is its last token)
    o.stopTokens = {got[0][2]};
    const auto stopped = nn::generate(*m, prompts, o);
    CHECK(stopped[0].size() <= 3);
    CHECK(stopped[0].back() == got[0][2]);
    CHECK(stopped[0] == std::vector<int64_t>(got[0].begin(), got[0].begin() + stopped[0].size()));
    // stop tokens of one row: that row alone stops
    o.stopTokens = {};
    o.rowStopTokens = {{}, {got[1][1]}, {}};
    const auto rowStopped = nn::generate(*m, prompts, o);
    CHECK(rowStopped[0] == got[0]);
    CHECK(rowStopped[1].size() <= 2);
    CHECK(rowStopped[1].back() == got[1][1]);
    CHECK(rowStopped[2] == got[2]);
    o.rowStopTokens = {{1}};
    CHECK(
        has(error_of([&] { nn::generate(*m, prompts, o); }), "rowStopTokens empty or one list per prompt (3), got 1"));
    o.rowStopTokens = {};
    // sampling is seeded: the same seed draws the same tokens
    o.temperature = 0.8;
    o.topK = 5;
    o.topP = 0.9;
    CHECK(nn::generate(*m, prompts, o) == nn::generate(*m, prompts, o));
  }
}

TEST_CASE("the sampler chain: greedy, top-k, top-p, temperature, seeded draws") {
  Generator gen(1);
  nn::GenerationOptions greedy;
  CHECK(nn::sample_token({0.f, 3.f, 3.f, -1.f}, greedy, gen) == 1);  // the first largest
  nn::GenerationOptions o;
  o.temperature = 1;
  o.topK = 1;
  for (int i = 0; i < 20; ++i) CHECK(nn::sample_token({0.f, 1.f, 5.f, 2.f}, o, gen) == 2);
  // probabilities 1/6, 2/6, 3/6
  const std::vector<float> logits = {0.f, std::log(2.f), std::log(3.f)};
  auto counts = [&](const nn::GenerationOptions& opt, int n) {
    std::map<int64_t, int> c;
    Generator g(42);
    for (int i = 0; i < n; ++i) c[nn::sample_token(logits, opt, g)]++;
    return c;
  };
  o.topK = 0;
  auto c = counts(o, 6000);
  CHECK(std::abs(c[0] - 1000) < 150);
  CHECK(std::abs(c[1] - 2000) < 200);
  CHECK(std::abs(c[2] - 3000) < 200);
  // top-k 2 drops the least likely; the rest renormalised 2:3
  o.topK = 2;
  c = counts(o, 5000);
  CHECK(c[0] == 0);
  CHECK(std::abs(c[1] - 2000) < 200);
  // top-p 0.5: the largest alone reaches it; 0.6 needs the two largest
  o.topK = 0;
  o.topP = 0.5;
  c = counts(o, 500);
  CHECK(c[2] == 500);
  o.topP = 0.6;
  c = counts(o, 3000);
  CHECK(c[0] == 0);
  CHECK(c[1] > 0);
  // a low temperature sharpens: almost always the largest
  o.topP = 1;
  o.temperature = 0.05;
  c = counts(o, 1000);
  CHECK(c[2] >= 999);
  // the same generator state draws the same
  Generator a(9), b(9);
  o.temperature = 1.3;
  for (int i = 0; i < 50; ++i) CHECK(nn::sample_token(logits, o, a) == nn::sample_token(logits, o, b));
}

TEST_CASE("bad sampling parameters, prompts and logits are errors naming generate") {
  manual_seed(2);
  auto m = nn::make_gpt2(tiny(nn::DecoderKind::GPT2));
  auto bad = [&](auto change, const std::string& part) {
    nn::GenerationOptions o;
    change(o);
    const std::string e = error_of([&] { nn::generate(*m, {{1, 2}}, o); });
    INFO(e);
    CHECK(has(e, "nn.generate: expected"));
    CHECK(has(e, part));
  };
  bad([](nn::GenerationOptions& o) { o.temperature = -0.5; }, "temperature >= 0");
  bad([](nn::GenerationOptions& o) { o.topP = 0; }, "top_p in (0, 1], got 0");
  bad([](nn::GenerationOptions& o) { o.topP = 1.5; }, "top_p in (0, 1], got 1.5");
  bad([](nn::GenerationOptions& o) { o.topK = -1; }, "top_k >= 0");
  bad([](nn::GenerationOptions& o) { o.maxNewTokens = -1; }, "maxNewTokens >= 0");
  bad([](nn::GenerationOptions& o) { o.maxNewTokens = 16; }, "n_positions 16");  // 2 + 16 - 1 > 16
  nn::GenerationOptions o;
  CHECK(has(error_of([&] { nn::generate(*m, {{1, 13}}, o); }), "token ids in [0, 13), got 13 at prompt 0, position 1"));
  CHECK(has(error_of([&] { nn::generate(*m, {{1}, {}}, o); }), "non-empty prompts"));
  CHECK(has(error_of([&] { nn::generate(*m, {}, o); }), "at least one prompt"));
  CHECK(has(error_of([&] { nn::generate(*m, {std::vector<int64_t>(17, 1)}, o); }), "n_positions"));
  Generator g;
  CHECK(has(error_of([&] { nn::sample_token({0.f, NAN}, o, g); }), "neither NaN nor +inf"));
  CHECK(has(error_of([&] { nn::sample_token({}, o, g); }), "at least one token"));
  o.maxNewTokens = 0;
  CHECK(nn::generate(*m, {{1, 2}}, o) == std::vector<std::vector<int64_t>>{{}});
  // NaN logits (from a NaN weight) are named alike by greedy decoding (which reads each row's
  // largest logit alone) and by sampling
  m->lmHead().weight.fill_(NAN);
  for (const double temperature : {0.0, 1.0}) {
    o.maxNewTokens = 3;
    o.temperature = temperature;
    CHECK(has(error_of([&] { nn::generate(*m, {{1, 2}}, o); }), "neither NaN nor +inf, got nan for token 0"));
  }
}

TEST_CASE("DecoderLM errors name the model: tokens, positions past n_positions, caches that do not fit") {
  auto m = nn::make_gpt2(tiny(nn::DecoderKind::GPT2));
  CHECK(has(error_of([&] { m->forward(zeros({2, 3})); }), "nn.DecoderLM::updateOutput: expected int64 token ids"));
  CHECK(has(error_of([&] { m->forward(zeros({1, 17}, DType::Int64)); }), "positions below n_positions 16"));
  CHECK(has(error_of([&] { m->setCache(std::make_shared<nn::KVCache>(3, 1, 2, 8, 4, DType::Float32, Device::cpu())); }),
            "expected a cache of 2 layers"));
  auto gqa = tiny(nn::DecoderKind::Llama);
  gqa.nKvHead = 3;
  CHECK(has(error_of([&] { nn::make_llama(gqa); }), "n_kv_head 0 (= n_head) or a divisor of n_head 2, got 3"));
  auto c = tiny(nn::DecoderKind::GPT2);
  c.nHead = 3;
  CHECK(has(error_of([&] { nn::make_gpt2(c); }), "nn.DecoderLM: expected n_embd divisible by n_head"));
}

TEST_CASE("DecoderLM through a model file: structure, weights and the tie come back") {
  TempDir dir("cudnn_nn_test_DecoderLM");
  for (nn::DecoderKind kind : kKinds) {
    for (bool tied : {true, false}) {
      INFO(nn::decoder_kind_name(kind), " tied ", tied);
      manual_seed(23);
      auto m = make(tiny(kind, tied));
      m->evaluate();
      const Tensor t = tokens({{1, 2, 3}, {4, 5, 6}});
      const Tensor want = m->forward(t).clone();
      nn::save_model(*m, dir / "lm");
      auto back = std::dynamic_pointer_cast<nn::DecoderLM>(nn::load_model(dir / "lm"));
      REQUIRE(back);
      CHECK(back->settings().tied == tied);
      CHECK(back->lmHead().weight.is_same_view(back->wte().weight) == tied);
      CHECK(max_abs_diff(back->forward(t), want) == 0);
    }
  }
}
