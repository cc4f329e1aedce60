// test_Attention.cpp: nn::sdpa and nn::sdpa_backward against PyTorch's
// F.scaled_dot_product_attention (float64; key lengths as a boolean attn_mask), finite
// differences (dropout included, with the mask repeated from the seed), and the errors; masks
// (boolean, additive, broadcast) and grouped-query attention against
// scripts/make_attention_mask_reference.py's F.scaled_dot_product_attention(enable_gqa=True).
#include <doctest/doctest.h>

#include "nn/Attention.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonContiguous.h"
#include "tests/support/TransformerReference.h"

#include <cmath>
#include <limits>
#include <map>

using namespace tensor;
using namespace testing;

namespace {

// scripts/make_attention_mask_reference.py's tensors
Tensor mask_ref(const std::string& key) {
  static const std::map<std::string, Tensor> refs =
      load_safetensors(transformer_data("attention_mask_reference.safetensors")).tensors;
  auto it = refs.find(key);
  INFO("reference key ", key);
  REQUIRE(it != refs.end());
  return it->second;
}
bool has_mask_ref(const std::string& key) {
  static const std::map<std::string, Tensor> refs =
      load_safetensors(transformer_data("attention_mask_reference.safetensors")).tensors;
  return refs.count(key) > 0;
}

nn::SdpaOptions options_for(const std::string& name) {
  nn::SdpaOptions o;
  o.causal = name.find("causal") != std::string::npos;
  if (name.find("lengths") != std::string::npos) o.keyLengths = torch_ref("sdpa." + name + ".lengths");
  if (name == "scale") o.scale = 0.3;
  return o;
}

// sum(sdpa(q, k, v) * r) with the dropout mask redrawn from one seed
double loss(const Tensor& q, const Tensor& k, const Tensor& v, const nn::SdpaOptions& o, const Tensor& r) {
  manual_seed(77);
  return sdpa(q, k, v, o).mul(r).sum().item();
}

// central differences of the loss over every entry of q, k and v against sdpa_backward
void expect_fd_ok(const Tensor& q, const Tensor& k, const Tensor& v, const nn::SdpaOptions& o, Generator& gen) {
  manual_seed(77);
  nn::SdpaSaved saved;
  const Tensor out = sdpa(q, k, v, o, &saved);
  const Tensor r = uniform(out.sizes(), -1, 1, gen, DType::Float64);
  const nn::SdpaGrads g = nn::sdpa_backward(q, k, v, out, r, o, saved);
  const Tensor* grads[] = {&g.q, &g.k, &g.v};
  const Tensor inputs[] = {q.clone(), k.clone(), v.clone()};
  const char* names[] = {"q", "k", "v"};
  for (int t = 0; t < 3; ++t) {
    Tensor x[] = {inputs[0], inputs[1], inputs[2]};
    Tensor flat = x[t].view({-1});
    double worst = 0;
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double saved_value = flat.get({i});
      const double eps = 1e-6;
      flat.set({i}, saved_value + eps);
      const double up = loss(x[0], x[1], x[2], o, r);
      flat.set({i}, saved_value - eps);
      const double down = loss(x[0], x[1], x[2], o, r);
      flat.set({i}, saved_value);
      const double numeric = (up - down) / (2 * eps);
      const double analytic = grads[t]->contiguous().view({-1}).get({i});
      worst = std::max(worst, std::abs(numeric - analytic) / std::max({std::abs(numeric), std::abs(analytic), 1.0}));
    }
    INFO("gradient of ", names[t]);
    CHECK(worst < 1e-7);
  }
}

}  // namespace

TEST_CASE("sdpa and its backward give PyTorch's values (plain, causal, Sq < Sk causal, key lengths, both, scale)") {
  for (const char* name : {"plain", "causal", "causal_wide", "lengths", "causal_lengths", "scale"}) {
    INFO(name);
    const std::string p = std::string("sdpa.") + name;
    const nn::SdpaOptions o = options_for(name);
    const Tensor q = torch_ref(p + ".q"), k = torch_ref(p + ".k"), v = torch_ref(p + ".v");
    nn::SdpaSaved saved;
    const Tensor out = nn::sdpa(q, k, v, o, &saved);
    expect_matches("out", out, torch_ref(p + ".out"));
    CHECK(saved.logsumexp.sizes() == Shape{q.size(0), q.size(1), q.size(2)});
    CHECK(saved.logsumexp.dtype() == DType::Float64);
    CHECK_FALSE(saved.dropoutMask.defined());
    const nn::SdpaGrads g = nn::sdpa_backward(q, k, v, out, torch_ref(p + ".gy"), o, saved);
    expect_matches("gq", g.q, torch_ref(p + ".gq"));
    expect_matches("gk", g.k, torch_ref(p + ".gk"));
    expect_matches("gv", g.v, torch_ref(p + ".gv"));
    // strided views give the same
    const Tensor out2 = nn::sdpa(noncontiguous_copy(q), noncontiguous_copy(k), noncontiguous_copy(v), o);
    CHECK(max_abs_diff(out2, out) == 0);
  }
}

TEST_CASE("sdpa finite differences: masks, a scale, and dropout with its mask repeated from the seed") {
  Generator gen(20261127);
  struct Case {
    int64_t B, H, Sq, Sk, D, Dv;
    bool causal;
    std::vector<int64_t> lengths;
    double scale, dropout;
  };
  for (const Case& c : std::vector<Case>{{1, 1, 3, 4, 2, 3, false, {}, 0, 0},
                                         {2, 2, 4, 4, 3, 2, true, {}, 0, 0},
                                         {2, 1, 3, 5, 2, 2, false, {2, 5}, 0.7, 0},
                                         {2, 2, 5, 3, 2, 3, true, {3, 1}, 0, 0},
                                         {1, 2, 4, 4, 3, 3, false, {}, 0, 0.3},
                                         {2, 1, 3, 4, 2, 2, true, {4, 2}, 0, 0.5}}) {
    nn::SdpaOptions o;
    o.causal = c.causal;
    o.scale = c.scale;
    o.dropout = c.dropout;
    if (!c.lengths.empty()) o.keyLengths = from_vector<int64_t>(c.lengths, {c.B});
    INFO("B ", c.B, " H ", c.H, " Sq ", c.Sq, " Sk ", c.Sk, " causal ", c.causal, " dropout ", c.dropout);
    expect_fd_ok(uniform({c.B, c.H, c.Sq, c.D}, -2, 2, gen, DType::Float64),
                 uniform({c.B, c.H, c.Sk, c.D}, -2, 2, gen, DType::Float64),
                 uniform({c.B, c.H, c.Sk, c.Dv}, -1, 1, gen, DType::Float64), o, gen);
  }
}

TEST_CASE("sdpa dropout: the mask holds 0 or 1/(1-p), is drawn from the seeded generator, and is what out used") {
  Generator gen(9);
  const Tensor q = uniform({2, 2, 5, 3}, -1, 1, gen), k = uniform({2, 2, 6, 3}, -1, 1, gen),
               v = uniform({2, 2, 6, 4}, -1, 1, gen);
  nn::SdpaOptions o;
  o.dropout = 0.25;
  nn::SdpaSaved s1, s2;
  manual_seed(5);
  const Tensor a = nn::sdpa(q, k, v, o, &s1);
  manual_seed(5);
  const Tensor b = nn::sdpa(q, k, v, o, &s2);
  CHECK(max_abs_diff(a, b) == 0);
  REQUIRE(s1.dropoutMask.sizes() == Shape{2, 2, 5, 6});
  CHECK(s1.dropoutMask.dtype() == DType::Float32);
  // the same draw as bernoulli_ on a tensor of that shape, scaled: what the GPU op repeats
  manual_seed(5);
  const Tensor expected = empty({2, 2, 5, 6}).bernoulli_(0.75).div_(0.75);
  CHECK(max_abs_diff(s1.dropoutMask, expected) == 0);
  // out = (softmax(s) * mask) v, P recomputed from the logsumexp, head by head
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t h = 0; h < 2; ++h) {
      const Tensor scores = q[b][h].matmul(k[b][h].t()).mul(1 / std::sqrt(3.0));
      const Tensor p = scores.sub(s1.logsumexp[b][h].unsqueeze(1).expand(scores.sizes())).exp();
      CHECK(max_abs_diff(p.mul(s1.dropoutMask[b][h]).matmul(v[b][h]), a[b][h]) < 1e-6);
      CHECK(max_abs_diff(p.sum(1), ones({5})) < 1e-6);
    }
  }
}

TEST_CASE("sdpa with masks and grouped-query attention gives PyTorch's values") {
  for (const char* name : {"gqa", "mqa_causal", "gqa_lengths", "bool_2d", "bool_b1", "bool_bh", "keypad",
                           "bool_causal_lengths", "add_2d", "add_b1", "add_bh", "add_f32", "dead", "dead_add"}) {
    INFO(name);
    const std::string p = std::string(name) + ".";
    nn::SdpaOptions o;
    const Tensor flags = mask_ref(p + "flags");
    o.causal = flags.get({0}) != 0;
    o.scale = flags.get({1});
    if (has_mask_ref(p + "mask")) o.mask = mask_ref(p + "mask");
    if (has_mask_ref(p + "lengths")) o.keyLengths = mask_ref(p + "lengths");
    const Tensor q = mask_ref(p + "q"), k = mask_ref(p + "k"), v = mask_ref(p + "v");
    nn::SdpaSaved saved;
    const Tensor out = nn::sdpa(q, k, v, o, &saved);
    expect_matches("out", out, mask_ref(p + "out"));
    const nn::SdpaGrads g = nn::sdpa_backward(q, k, v, out, mask_ref(p + "gy"), o, saved);
    expect_matches("gq", g.q, mask_ref(p + "gq"));
    expect_matches("gk", g.k, mask_ref(p + "gk"));
    expect_matches("gv", g.v, mask_ref(p + "gv"));
    CHECK(g.k.sizes() == k.sizes());
    // strided views (and a strided mask) give the same
    nn::SdpaOptions os = o;
    if (o.mask.defined()) os.mask = noncontiguous_copy(o.mask);
    const Tensor out2 = nn::sdpa(noncontiguous_copy(q), noncontiguous_copy(k), noncontiguous_copy(v), os);
    CHECK(max_abs_diff(out2, out) == 0);
  }
}

TEST_CASE("sdpa: a row with no key left gives 0, logsumexp -inf and no gradient") {
  const Tensor q = mask_ref("dead.q"), k = mask_ref("dead.k"), v = mask_ref("dead.v");
  nn::SdpaOptions o;
  o.mask = mask_ref("dead.mask");
  nn::SdpaSaved saved;
  const Tensor out = nn::sdpa(q, k, v, o, &saved);
  CHECK(saved.logsumexp.get({0, 1, 2}) == -std::numeric_limits<double>::infinity());
  CHECK(saved.logsumexp.get({1, 0, 4}) == -std::numeric_limits<double>::infinity());
  CHECK(std::isfinite(saved.logsumexp.get({0, 0, 2})));
  CHECK(out[0][1][2].abs().sum().item() == 0);
  const nn::SdpaGrads g = nn::sdpa_backward(q, k, v, out, mask_ref("dead.gy"), o, saved);
  CHECK(g.q[0][1][2].abs().sum().item() == 0);
  CHECK(g.q[1][0][4].abs().sum().item() == 0);
  CHECK(std::isfinite(g.k.sum().item()));
  CHECK(std::isfinite(g.v.sum().item()));
}

TEST_CASE("sdpa finite differences with masks and grouped-query attention") {
  Generator gen(20261202);
  struct Case {
    int64_t B, H, Hkv, Sq, Sk;
    bool causal;
    int kind;  // 0 none, 1 boolean [B x 1 x Sq x Sk], 2 additive [Sq x Sk], 3 boolean [B x 1 x 1 x Sk]
    double dropout;
  };
  for (const Case& c : std::vector<Case>{{2, 4, 2, 3, 4, false, 0, 0},
                                         {1, 3, 1, 4, 3, true, 1, 0},
                                         {2, 2, 2, 3, 5, false, 2, 0},
                                         {2, 4, 1, 3, 4, true, 3, 0},
                                         {1, 2, 1, 3, 4, false, 1, 0.3}}) {
    nn::SdpaOptions o;
    o.causal = c.causal;
    o.dropout = c.dropout;
    if (c.kind == 1) {
      o.mask = uniform({c.B, 1, c.Sq, c.Sk}, 0, 1, gen, DType::Float64).gt(0.4).to(DType::UInt8);
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t i = 0; i < c.Sq; ++i) o.mask.set({b, 0, i, 0}, 1);
    } else if (c.kind == 2) {
      o.mask = uniform({c.Sq, c.Sk}, -2, 2, gen, DType::Float64);
      o.mask.set({1, 2}, -std::numeric_limits<double>::infinity());
    } else if (c.kind == 3) {
      o.mask = zeros({c.B, 1, 1, c.Sk}, DType::UInt8);
      for (int64_t b = 0; b < c.B; ++b) o.mask.set({b, 0, 0, 0}, 1), o.mask.set({b, 0, 0, c.Sk - 1 - b}, 1);
    }
    INFO("B ", c.B, " H ", c.H, " Hkv ", c.Hkv, " Sq ", c.Sq, " Sk ", c.Sk, " causal ", c.causal, " mask ", c.kind);
    expect_fd_ok(uniform({c.B, c.H, c.Sq, 3}, -2, 2, gen, DType::Float64),
                 uniform({c.B, c.Hkv, c.Sk, 3}, -2, 2, gen, DType::Float64),
                 uniform({c.B, c.Hkv, c.Sk, 2}, -1, 1, gen, DType::Float64), o, gen);
  }
}

TEST_CASE("sdpa: an empty batch gives an empty output and gradients") {
  const Tensor q = zeros({0, 2, 3, 4}), k = zeros({0, 2, 5, 4}), v = zeros({0, 2, 5, 6});
  nn::SdpaSaved saved;
  const Tensor out = nn::sdpa(q, k, v, {}, &saved);
  CHECK(out.sizes() == Shape{0, 2, 3, 6});
  const nn::SdpaGrads g = nn::sdpa_backward(q, k, v, out, zeros({0, 2, 3, 6}), {}, saved);
  CHECK(g.q.sizes() == q.sizes());
  CHECK(g.k.sizes() == k.sizes());
  CHECK(g.v.sizes() == v.sizes());
}

TEST_CASE("sdpa errors name the op and the shapes") {
  const Tensor q = zeros({2, 3, 4, 5}), k = zeros({2, 3, 6, 5}), v = zeros({2, 3, 6, 7});
  const std::string shapes = "q [2 x 3 x 4 x 5], k [2 x 3 x 6 x 5], v [2 x 3 x 6 x 7]";
  const std::string agree =
      "nn.sdpa: expected q [B x H x Sq x D], k [B x Hkv x Sk x D] and v [B x Hkv x Sk x Dv] that agree (H a multiple "
      "of Hkv), got ";
  CHECK_THROWS_WITH_AS(nn::sdpa(q, zeros({2, 3, 6, 4}), v),
                       (agree + "q [2 x 3 x 4 x 5], k [2 x 3 x 6 x 4], v [2 x 3 x 6 x 7]").c_str(), Error);
  CHECK_THROWS_WITH_AS(nn::sdpa(q, k, zeros({2, 3, 5, 7})),
                       (agree + "q [2 x 3 x 4 x 5], k [2 x 3 x 6 x 5], v [2 x 3 x 5 x 7]").c_str(), Error);
  CHECK_THROWS_WITH_AS(nn::sdpa(zeros({1, 3, 4, 5}), k, v),
                       (agree + "q [1 x 3 x 4 x 5], k [2 x 3 x 6 x 5], v [2 x 3 x 6 x 7]").c_str(), Error);
  // grouped-query attention: Hkv must divide H, and k and v agree on it
  CHECK_THROWS_WITH_AS(nn::sdpa(q, zeros({2, 2, 6, 5}), zeros({2, 2, 6, 7})),
                       (agree + "q [2 x 3 x 4 x 5], k [2 x 2 x 6 x 5], v [2 x 2 x 6 x 7]").c_str(), Error);
  CHECK_THROWS_WITH_AS(nn::sdpa(zeros({2, 4, 4, 5}), zeros({2, 2, 6, 5}), zeros({2, 1, 6, 7})),
                       (agree + "q [2 x 4 x 4 x 5], k [2 x 2 x 6 x 5], v [2 x 1 x 6 x 7]").c_str(), Error);
  {
    const std::string mask_msg =
        "nn.sdpa: expected a mask uint8 (boolean) or float32 (additive) on cpu "
        "broadcastable to [2 x 3 x 4 x 6] ([B x H x Sq x Sk] of " +
        shapes + "), got ";
    nn::SdpaOptions m;
    m.mask = zeros({4, 5});
    CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, m), (mask_msg + "float32 [4 x 5] on cpu").c_str(), Error);
    m.mask = zeros({2, 2, 4, 6});
    CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, m), (mask_msg + "float32 [2 x 2 x 4 x 6] on cpu").c_str(), Error);
    m.mask = zeros({4, 6}, DType::Float64);
    CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, m), (mask_msg + "float64 [4 x 6] on cpu").c_str(), Error);
    m.mask = zeros({4, 6}, DType::Int64);
    CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, m), (mask_msg + "int64 [4 x 6] on cpu").c_str(), Error);
    m.mask = zeros({1, 2, 1, 4, 6});
    CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, m), (mask_msg + "float32 [1 x 2 x 1 x 4 x 6] on cpu").c_str(), Error);
    // every listed form is taken
    for (const Shape& ok : {Shape{4, 6}, Shape{2, 1, 4, 6}, Shape{2, 3, 4, 6}, Shape{1, 1, 4, 6}, Shape{2, 1, 1, 6}}) {
      m.mask = ones(ok, DType::UInt8);
      CHECK_NOTHROW(nn::sdpa(q, k, v, m));
    }
  }
  CHECK_THROWS_WITH_AS(
      nn::sdpa(q, k, v.to(DType::Float64)),
      "nn.sdpa: expected floating q, k and v of one dtype and device, got q float32 [2 x 3 x 4 x 5] on "
      "cpu, k float32 [2 x 3 x 6 x 5] on cpu, v float64 [2 x 3 x 6 x 7] on cpu",
      Error);
  nn::SdpaOptions o;
  o.keyLengths = from_vector<int64_t>({3, 7}, {2});
  CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, o),
                       "nn.sdpa: expected keyLengths in [1, 6] (Sk of k [2 x 3 x 6 x 5]), got 7 at batch entry 1",
                       Error);
  o.keyLengths = from_vector<int64_t>({0, 2}, {2});
  CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, o),
                       "nn.sdpa: expected keyLengths in [1, 6] (Sk of k [2 x 3 x 6 x 5]), got 0 at batch entry 0",
                       Error);
  o.keyLengths = from_vector<int64_t>({1, 2, 3}, {3});
  CHECK_THROWS_WITH_AS(
      nn::sdpa(q, k, v, o),
      ("nn.sdpa: expected keyLengths int64 [2] (one per batch entry of " + shapes + "), got int64 [3] on cpu").c_str(),
      Error);
  o.keyLengths = zeros({2});
  CHECK_THROWS_WITH_AS(
      nn::sdpa(q, k, v, o),
      ("nn.sdpa: expected keyLengths int64 [2] (one per batch entry of " + shapes + "), got float32 [2] on cpu")
          .c_str(),
      Error);
  nn::SdpaOptions s;
  s.scale = -1;
  CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, s), "nn.sdpa: expected a finite scale > 0 (or 0 for 1/sqrt(D)), got -1",
                       Error);
  s.scale = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, s), "nn.sdpa: expected a finite scale > 0 (or 0 for 1/sqrt(D)), got inf",
                       Error);
  nn::SdpaOptions d;
  d.dropout = 1;
  CHECK_THROWS_WITH_AS(nn::sdpa(q, k, v, d), "nn.sdpa: expected dropout in [0, 1), got 1", Error);
  nn::SdpaSaved saved;
  const Tensor out = nn::sdpa(q, k, v, {}, &saved);
  CHECK_THROWS_WITH_AS(
      nn::sdpa_backward(q, k, v, out, zeros({2, 3, 4, 6}), {}, saved),
      "nn.sdpa_backward: expected out and gradOut of [2 x 3 x 4 x 7] and q's dtype (float32 [2 x 3 x 4 x "
      "5] on cpu), got float32 [2 x 3 x 4 x 6] on cpu",
      Error);
  CHECK_THROWS_WITH_AS(nn::sdpa_backward(q, k, v, out, out, {}, nn::SdpaSaved{}),
                       "nn.sdpa_backward: expected saved.logsumexp [2 x 3 x 4] from sdpa's forward, got an undefined "
                       "tensor",
                       Error);
}
