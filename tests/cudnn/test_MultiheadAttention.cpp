// test_MultiheadAttention.cpp: cudnn.MultiheadAttention and cudnn.TransformerEncoderLayer against
// their nn modules (float64 on the CPU) in every dtype: self-attention in both layouts, causal,
// key lengths, cross-attention with a memory (its gradient too), then the encoder layer post-
// and pre-norm with ReLU and GELU; convert round trips.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/MultiheadAttention.h"
#include "cudnn/TransformerEncoderLayer.h"
#include "cudnn/core/Config.h"
#include "nn/MultiheadAttention.h"
#include "nn/TransformerEncoderLayer.h"
#include "tensor/Cuda.h"
#include "tests/support/AddingChecks.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

double rel(const Tensor& got, const Tensor& want) {
  const Tensor g = got.to(Device::cpu(), DType::Float64), w = want.to(Device::cpu(), DType::Float64);
  const double norm = w.norm();
  return g.sub(w).norm() / (norm > 0 ? norm : 1.0);
}

// uint8 [n x n], PyTorch's boolean attn_mask: about 30% of the keys not allowed, never a query's own
Tensor random_bool_mask(int64_t n, Generator& gen) {
  const std::vector<double> u = uniform({n, n}, 0, 1, gen, DType::Float64).to_vector<double>();
  std::vector<uint8_t> v(u.size());
  for (int64_t i = 0; i < n * n; ++i) v[static_cast<size_t>(i)] = (u[static_cast<size_t>(i)] < 0.3 && i / n != i % n);
  return from_vector(v, {n, n});
}

// 16-bit twins through several products: looser than a single layer's tolerance
TwinTolerance attention_tolerance(DType dt) {
  TwinTolerance t = TwinTolerance::for_dtype(dt);
  if (dt == DType::Float16) t = {1e-2, 2e-2};
  if (dt == DType::BFloat16) t = {5e-2, 8e-2};
  return t;
}
}  // namespace

TEST_CASE("cudnn.MultiheadAttention matches nn.MultiheadAttention (self-attention, both layouts, causal, lengths)") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(7301);
  INFO("seed 7301");
  struct Case {
    int64_t E, heads, S, B;
    bool batchFirst, causal, lengths, bias;
  };
  const Case cases[] = {
      {64, 4, 24, 3, false, false, false, true}, {64, 4, 24, 3, true, true, false, true},
      {32, 2, 17, 2, false, true, true, true},   {48, 3, 9, 4, true, false, true, false},
      {12, 3, 5, 2, false, false, false, true},  // head size 4: the fallback in every dtype
  };
  for (const Case& c : cases) {
    for (DType dt : kDtypes) {
      INFO("E ", c.E, " heads ", c.heads, " S ", c.S, " B ", c.B, c.batchFirst ? " batchFirst" : "",
           c.causal ? " causal" : "", c.lengths ? " lengths" : "", c.bias ? "" : " no bias", " ", name(dt));
      nn::MultiheadAttention ref(c.E, c.heads, 0, c.bias, c.batchFirst);
      cudnn::MultiheadAttention twin(c.E, c.heads, 0, c.bias, c.batchFirst);
      ref.causal = twin.causal = c.causal;
      if (c.lengths) {
        std::vector<int64_t> len;
        for (int64_t b = 0; b < c.B; ++b) len.push_back(1 + (c.S - 1) * (b + 1) / c.B);
        ref.setKeyLengths(from_vector(len, {c.B}));
        twin.setKeyLengths(from_vector(len, {c.B}).to(gpu));
      }
      const Shape shape = c.batchFirst ? Shape{c.B, c.S, c.E} : Shape{c.S, c.B, c.E};
      expect_twin_matches(ref, twin, uniform(shape, -1, 1, gen, DType::Float64), dt, attention_tolerance(dt));
    }
  }
}

TEST_CASE("cudnn.MultiheadAttention's cross-attention gives nn's output, gradients and memory gradient") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(7302);
  const int64_t E = 32, H = 4, S = 12, Sk = 20, B = 2;
  for (DType dt : kDtypes) {
    INFO(name(dt));
    nn::MultiheadAttention ref(E, H);
    cudnn::MultiheadAttention twin(E, H);
    twin.loadStateDict(ref.stateDict());
    twin.to(gpu);
    twin.to(dt);
    ref.to(DType::Float64);
    const Tensor x = uniform({S, B, E}, -1, 1, gen, DType::Float64);
    const Tensor mem = uniform({Sk, B, E}, -1, 1, gen, DType::Float64);
    const Tensor gy = uniform({S, B, E}, -1, 1, gen, DType::Float64);
    ref.setMemory(mem);
    twin.setMemory(mem.to(gpu, dt));
    ref.zeroGradParameters();
    twin.zeroGradParameters();
    const Tensor want = ref.forward(x);
    const Tensor got = twin.forward(x.to(gpu, dt));
    ref.backward(x, gy);
    twin.backward(x.to(gpu, dt), gy.to(gpu, dt));
    const TwinTolerance tol = attention_tolerance(dt);
    CHECK(rel(got, want) < tol.forward);
    CHECK(rel(twin.gradInput, ref.gradInput) < tol.backward);
    CHECK(rel(twin.gradMemory, ref.gradMemory) < tol.backward);
    CHECK(rel(twin.gradInProjWeight, ref.gradInProjWeight) < tol.backward);
    CHECK(rel(twin.gradOutProjWeight, ref.gradOutProjWeight) < tol.backward);
    CHECK(rel(twin.gradInProjBias, ref.gradInProjBias) < tol.backward);
  }
}

TEST_CASE("cudnn.TransformerEncoderLayer matches nn.TransformerEncoderLayer (post- and pre-norm, ReLU and GELU)") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(7303);
  for (bool normFirst : {false, true}) {
    for (const char* act : {"relu", "gelu"}) {
      for (DType dt : kDtypes) {
        INFO((normFirst ? "pre-norm " : "post-norm "), act, " ", name(dt));
        auto ref = std::make_shared<nn::TransformerEncoderLayer>(32, 4, 64, 0.0, act, false, normFirst);
        auto gpu_net = std::make_shared<nn::TransformerEncoderLayer>(32, 4, 64, 0.0, act, false, normFirst);
        nn::ModulePtr twin = nn::convert(gpu_net, cudnn::backend);
        CHECK(twin->type_name() == "cudnn.TransformerEncoderLayer");
        // a whole layer (attention, two norms, the feed-forward block) in 16 bits: twice one block's bound
        TwinTolerance tol = attention_tolerance(dt);
        if (dt == DType::Float16 || dt == DType::BFloat16) tol.backward *= 2;
        expect_twin_matches(*ref, *twin, uniform({10, 3, 32}, -1, 1, gen, DType::Float64), dt, tol);
      }
    }
  }
}

TEST_CASE("cudnn.MultiheadAttention and cudnn.TransformerEncoderLayer convert both ways") {
  Generator gen(7304);
  expect_convert_roundtrip(std::make_shared<nn::MultiheadAttention>(16, 2), uniform({6, 2, 16}, -1, 1, gen));
  auto layer = std::make_shared<nn::TransformerEncoderLayer>(16, 2, 32, 0.0, "gelu");
  layer->evaluate();
  expect_convert_roundtrip(layer, uniform({6, 2, 16}, -1, 1, gen));
}

TEST_CASE("cudnn.MultiheadAttention matches nn with grouped-query heads, RoPE, attn_mask and key_padding_mask") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(7305);
  struct Case {
    int64_t kvHeads;
    bool rope, causal, boolMask, addMask, kpm;
  };
  const Case cases[] = {{2, true, true, false, false, false},
                        {1, true, false, true, false, true},
                        {4, true, false, false, true, true},
                        {2, false, true, false, false, true}};
  const int64_t E = 64, H = 4, S = 12, B = 2;
  for (const Case& c : cases) {
    for (DType dt : kDtypes) {
      INFO("kv heads ", c.kvHeads, c.rope ? " rope" : "", c.causal ? " causal" : "", c.boolMask ? " bool mask" : "",
           c.addMask ? " additive mask" : "", c.kpm ? " kpm" : "", " ", name(dt));
      nn::MultiheadAttentionOptions o;
      o.embedDim = E;
      o.numHeads = H;
      o.numKvHeads = c.kvHeads;
      o.batchFirst = true;
      o.causal = c.causal;
      if (c.rope) o.rotary = nn::RotaryOptions{};
      nn::MultiheadAttention ref(o);
      cudnn::MultiheadAttention twin(o);
      Tensor mask, kpm;
      if (c.boolMask) mask = random_bool_mask(S, gen);
      if (c.addMask) mask = uniform({B * H, S, S}, -2, 2, gen, DType::Float64);
      if (c.kpm)
        kpm = from_vector<uint8_t>(std::vector<uint8_t>{0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1,  //
                                                        0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1},
                                   {B, S});
      if (mask.defined()) {
        ref.setAttnMask(mask);
        twin.setAttnMask(mask.dtype() == DType::UInt8 ? mask.to(gpu) : mask.to(gpu, dt));
      }
      if (kpm.defined()) {
        ref.setKeyPaddingMask(kpm);
        twin.setKeyPaddingMask(kpm.to(gpu));
      }
      expect_twin_matches(ref, twin, uniform({B, S, E}, -1, 1, gen, DType::Float64), dt, attention_tolerance(dt));
    }
  }
}

TEST_CASE("cudnn.MultiheadAttention forwardAdding matches nn's: a few rows' output projection takes the addend") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4903);
  for (DType dt : kDtypes) {
    for (const Shape& s : {Shape{1, 1, 64}, Shape{2, 1, 64}, Shape{3, 5, 64}}) {
      INFO(name(dt), " input ", shape_str(s));
      nn::MultiheadAttentionOptions o;
      o.embedDim = 64, o.numHeads = 4, o.numKvHeads = 2, o.batchFirst = true, o.causal = true;
      nn::MultiheadAttention ref(o);
      cudnn::MultiheadAttention twin(o);
      expect_twin_adding_matches(ref, twin, uniform(s, -1, 1, gen, DType::Float64), dt,
                                 TwinTolerance::for_dtype(dt).forward);
    }
  }
}