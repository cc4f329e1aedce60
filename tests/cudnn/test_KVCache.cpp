// test_KVCache.cpp (GPU): cudnn.MultiheadAttention's cached decoding (GQA, RoPE, batch rows of
// different lengths, with and without fixedShape) against nn's whole-sequence forward in float64,
// in float32 (TF32 off), float64, float16 and bfloat16; a decode step captured in a CUDA graph
// replayed with new lengths; a cache on the wrong device; backward refused.
#include <doctest/doctest.h>

#include "cudnn/MultiheadAttention.h"
#include "cudnn/core/Config.h"
#include "nn/KVCache.h"
#include "nn/MultiheadAttention.h"
#include "tensor/Cuda.h"
#include "tests/support/CachedDecoding.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);

nn::MultiheadAttentionOptions decoder_options(int64_t kvHeads, bool rope) {
  nn::MultiheadAttentionOptions o;
  o.embedDim = 64;
  o.numHeads = 4;
  o.numKvHeads = kvHeads;
  o.batchFirst = true;
  o.causal = true;
  if (rope) o.rotary = nn::RotaryOptions{nn::RotaryStyle::Half, 10000, 0};
  return o;
}

double tolerance(DType dt) {
  switch (dt) {
    case DType::Float64:
      return 1e-10;
    case DType::Float32:
      return 1e-4;
    case DType::Float16:
      return 2e-2;
    default:
      return 8e-2;
  }
}
}  // namespace

TEST_CASE("cudnn.MultiheadAttention's cached decoding equals nn's whole-sequence forward in every dtype") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4801);
  for (int64_t kvHeads : {4, 2, 1}) {
    for (bool fixedShape : {false, true}) {
      for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
        INFO("kv heads ", kvHeads, fixedShape ? " fixed shape " : " ", name(dt));
        nn::MultiheadAttention ref(decoder_options(kvHeads, true));
        ref.inProjBias.uniform_(-0.5, 0.5, gen);
        cudnn::MultiheadAttention twin(decoder_options(kvHeads, true));
        twin.loadStateDict(ref.stateDict());
        ref.to(DType::Float64);
        ref.evaluate();
        twin.to(gpu);
        twin.to(dt);
        const Tensor X = uniform({3, 12, 64}, -1, 1, gen, DType::Float64);
        const Tensor full = ref.forward(X).clone();
        expect_decoding_matches(twin, X.to(gpu, dt), full, {3, 7, 1}, fixedShape, tolerance(dt));
      }
    }
  }
}

TEST_CASE("cudnn.MultiheadAttention: a decode step captured in a CUDA graph replays with the cache's new lengths") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4802);
  nn::MultiheadAttention ref(decoder_options(2, true));
  cudnn::MultiheadAttention twin(decoder_options(2, true));
  twin.loadStateDict(ref.stateDict());
  ref.to(DType::Float64);
  ref.evaluate();
  twin.to(gpu);
  twin.evaluate();
  const int64_t B = 2, T = 10;
  const Tensor X = uniform({B, T, 64}, -1, 1, gen, DType::Float64);
  const Tensor full = ref.forward(X).clone();
  auto cache = std::make_shared<nn::KVCache>(1, B, 2, T, 16, DType::Float32, gpu, nn::KVCacheOptions{true});
  twin.setCache(cache, 0);
  const std::vector<int64_t> prompts{2, 4};
  twin.forward(X.narrow(1, 0, 4).to(gpu, DType::Float32));
  cache->setLengths(prompts);
  std::vector<int64_t> at = prompts;
  Tensor step = decoding_step(X, at, 1).to(gpu, DType::Float32);  // static input, refreshed in place
  for (int warm = 0; warm < 2; ++warm) twin.forward(step);        // warm-up: plans and buffers
  Tensor y;
  const cuda::Graph graph = cuda::Graph::capture([&] { y = twin.forward(step); });
  for (int s = 0; s < 4; ++s) {
    step.copy_(decoding_step(X, at, 1).to(gpu, DType::Float32));
    graph.replay();
    const Tensor got = y.cpu();
    for (int64_t b = 0; b < B; ++b) {
      INFO("replay ", s, " row ", b, " position ", at[b]);
      expect_matches("decode", got.select(0, b), full.select(0, b).narrow(0, at[b], 1), 1e-4);
    }
    cache->advance(1);
    for (auto& a : at) ++a;
  }
}

TEST_CASE(
    "cudnn.MultiheadAttention: a step's calls share the cache's int32 key lengths (beginStep), eager and captured") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4803);
  nn::MultiheadAttention ref(decoder_options(2, true));
  cudnn::MultiheadAttention twin(decoder_options(2, true));
  twin.loadStateDict(ref.stateDict());
  ref.to(DType::Float64);
  ref.evaluate();
  twin.to(gpu);
  twin.evaluate();
  const int64_t B = 2, T = 12;
  const Tensor X = uniform({B, T, 64}, -1, 1, gen, DType::Float64);
  const Tensor full = ref.forward(X).clone();
  auto cache = std::make_shared<nn::KVCache>(1, B, 2, T, 16, DType::Float32, gpu, nn::KVCacheOptions{true});
  twin.setCache(cache, 0);
  twin.forward(X.narrow(1, 0, 5).to(gpu, DType::Float32));
  const std::vector<int64_t> prompts{3, 5};
  cache->setLengths(prompts);
  std::vector<int64_t> at = prompts;
  // the words cuDNN reads: each row's length + 1 as int32, made in this step
  auto expect_words = [&](const char* when) {
    const nn::KVCache::StepWords& w = cache->stepWords();
    REQUIRE(w.words.defined());
    CHECK(w.step == cache->stepCount());
    const Tensor host = w.words.cpu();
    const auto* v = static_cast<const int32_t*>(host.raw_data());
    for (int64_t b = 0; b < B; ++b) {
      INFO(when, " row ", b);
      CHECK(v[b] == at[static_cast<size_t>(b)] + 1);
    }
  };
  auto expect_step = [&](const Tensor& y, const char* when) {
    const Tensor got = y.cpu();
    for (int64_t b = 0; b < B; ++b) {
      const int64_t pos = at[static_cast<size_t>(b)];
      INFO(when, " row ", b, " position ", pos);
      expect_matches("decode", got.select(0, b), full.select(0, b).narrow(0, pos, 1), 1e-4);
    }
  };
  Tensor step = decoding_step(X, at, 1).to(gpu, DType::Float32);  // static input, refreshed in place
  for (int s = 0; s < 2; ++s) {                                   // eager steps
    step.copy_(decoding_step(X, at, 1).to(gpu, DType::Float32));
    cache->beginStep(1);
    const int64_t before = cache->stepWords().step;
    const Tensor y = twin.forward(step).clone();
    CHECK(cache->stepWords().step != before);  // made by the step's first call
    expect_words("eager");
    // a second call in the step (another layer's, in a model) reads them as they are
    CHECK(max_abs_diff(twin.forward(step).cpu(), y.cpu()) == 0);
    expect_words("eager, second call");
    expect_step(y, "eager");
    cache->advance(1);
    for (auto& a : at) ++a;
  }
  cache->beginStep(1);
  twin.forward(step);  // warm-up: plans and buffers
  Tensor y;
  const cuda::Graph graph = cuda::Graph::capture([&] {
    cache->beginStep(1);
    y = twin.forward(step);
  });
  for (int s = 0; s < 3; ++s) {
    step.copy_(decoding_step(X, at, 1).to(gpu, DType::Float32));
    graph.replay();
    expect_words("replay");
    expect_step(y, "replay");
    cache->advance(1);
    for (auto& a : at) ++a;
  }
}

TEST_CASE("cudnn.MultiheadAttention's cached forward refuses a cache on another device and backward") {
  Generator gen(4803);
  cudnn::MultiheadAttention twin(decoder_options(2, true));
  twin.to(gpu);
  twin.evaluate();
  const Tensor x = uniform({2, 3, 64}, -1, 1, gen).to(gpu);
  twin.setCache(std::make_shared<nn::KVCache>(1, 2, 2, 8, 16, DType::Float32, Device::cpu()), 0);
  CHECK_THROWS_WITH_AS(twin.forward(x),
                       "cudnn.MultiheadAttention::updateOutput: expected a KV cache of batch 2, kv_heads 2, head_dim "
                       "16, float32 on cuda:0 with a layer 0 (input float32 [2 x 3 x 64] on cuda:0), got "
                       "nn.KVCache(layers=1, batch=2, kv_heads=2, max_length=8, head_dim=16, float32 on cpu)",
                       Error);
  auto cache = std::make_shared<nn::KVCache>(1, 2, 2, 8, 16, DType::Float32, gpu);
  twin.setCache(cache, 0);
  const Tensor y = twin.forward(x).clone();
  CHECK_THROWS_WITH_AS(twin.backward(x, y), doctest::Contains("expected a forward without a KV cache"), Error);
  CHECK_THROWS_WITH_AS(twin.forward(uniform({2, 9, 64}, -1, 1, gen).to(gpu)),
                       doctest::Contains("expected the cached lengths plus the 9 new tokens within max_length 8"),
                       Error);
}
