// test_KVCache.cpp: nn::KVCache and nn.MultiheadAttention's cached forward: a prefill then
// token-by-token decoding of batch rows of different lengths (and a chunk of two tokens after
// them) gives what recomputing the whole sequence gives, with and without fixedShape; bad input.
#include <doctest/doctest.h>

#include "nn/KVCache.h"
#include "nn/MultiheadAttention.h"
#include "tests/support/CachedDecoding.h"

using namespace tensor;
using namespace testing;

namespace {

nn::MultiheadAttentionOptions decoder_options(int64_t kvHeads, bool rope) {
  nn::MultiheadAttentionOptions o;
  o.embedDim = 16;
  o.numHeads = 4;
  o.numKvHeads = kvHeads;
  o.batchFirst = true;
  o.causal = true;
  if (rope) o.rotary = nn::RotaryOptions{nn::RotaryStyle::Half, 10000, 0};
  return o;
}

}  // namespace

TEST_CASE("KVCache: shapes, lengths, errors") {
  nn::KVCache c(2, 3, 2, 8, 4, DType::Float32, Device::cpu());
  CHECK(c.key(1).sizes() == Shape{3, 2, 8, 4});
  CHECK(c.value(0).sizes() == Shape{3, 2, 8, 4});
  CHECK(c.lengths().dtype() == DType::Int64);
  CHECK(c.hostLengths() == std::vector<int64_t>{0, 0, 0});
  c.advance(3);
  CHECK(c.lengths().to_vector<int64_t>() == std::vector<int64_t>{3, 3, 3});
  c.setLengths({1, 5, 2});
  CHECK(c.lengths().to_vector<int64_t>() == std::vector<int64_t>{1, 5, 2});
  CHECK(c.maxHostLength() == 5);
  CHECK_THROWS_WITH_AS(c.advance(4),
                       "nn.KVCache::advance: expected 0 <= tokens and every length + tokens <= max_length 8, got 4 "
                       "tokens after lengths [1, 5, 2]",
                       Error);
  CHECK_THROWS_WITH_AS(c.setLengths({1, 9, 0}), "nn.KVCache::setLengths: expected 3 lengths in [0, 8], got [1, 9, 0]",
                       Error);
  CHECK_THROWS_WITH_AS(c.setLengths({1}), "nn.KVCache::setLengths: expected 3 lengths in [0, 8], got [1]", Error);
  CHECK_THROWS_WITH_AS(c.key(2), "nn.KVCache::key: expected a layer in [0, 2), got 2", Error);
  c.reset();
  CHECK(c.hostLengths() == std::vector<int64_t>{0, 0, 0});
  CHECK(c.lengths().to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0});
  CHECK(c.str() == "nn.KVCache(layers=2, batch=3, kv_heads=2, max_length=8, head_dim=4, float32 on cpu)");
  CHECK_THROWS_WITH_AS(nn::KVCache(0, 1, 1, 1, 1, DType::Float32, Device::cpu()),
                       doctest::Contains("nn.KVCache: expected layers, kv_heads, max_length and head_dim >= 1"), Error);
}

TEST_CASE("KVCache::beginStep: the keys' lengths once for every layer, until the lengths move") {
  nn::KVCache c(2, 3, 2, 8, 4, DType::Float32, Device::cpu());
  c.setLengths({1, 5, 2});
  CHECK(!c.keyLengths(1).defined());  // no step begun
  c.beginStep(2);
  const Tensor k = c.keyLengths(2);
  REQUIRE(k.defined());
  CHECK(k.to_vector<int64_t>() == std::vector<int64_t>{3, 7, 4});
  CHECK(!c.keyLengths(1).defined());  // made for 2 new tokens, not 1
  c.advance(1);
  CHECK(!c.keyLengths(2).defined());  // the lengths moved
  c.beginStep(1);
  CHECK(c.keyLengths(1).to_vector<int64_t>() == std::vector<int64_t>{3, 7, 4});
  CHECK(c.keyLengths(1).is_same_view(k));  // in place: where a captured step reads it
  c.setLengths({0, 0, 0});
  CHECK(!c.keyLengths(1).defined());
  c.beginStep(1);
  c.reset();
  CHECK(!c.keyLengths(1).defined());
  CHECK_THROWS_WITH_AS(c.beginStep(-1), "nn.KVCache::beginStep: expected tokens >= 0, got -1", Error);
}

TEST_CASE(
    "MultiheadAttention's cached decoding equals recomputing the whole sequence (GQA, RoPE, rows of different "
    "lengths)") {
  Generator gen(48);
  for (int64_t kvHeads : {4, 2, 1}) {
    for (bool rope : {true, false}) {
      for (bool fixedShape : {false, true}) {
        for (DType dt : {DType::Float64, DType::Float32}) {
          INFO("kv heads ", kvHeads, rope ? " rope" : "", fixedShape ? " fixed shape" : "", " ", name(dt));
          nn::MultiheadAttention m(decoder_options(kvHeads, rope));
          m.to(dt);
          m.inProjBias.uniform_(-0.5, 0.5, gen);
          const Tensor X = uniform({3, 9, 16}, -1, 1, gen, dt);
          m.evaluate();
          const Tensor full = m.forward(X).clone();
          expect_decoding_matches(m, X, full, {2, 4, 1}, fixedShape, dt == DType::Float64 ? 1e-12 : 1e-5);
        }
      }
    }
  }
}

TEST_CASE("MultiheadAttention's cached forward refuses bad input, naming the cache") {
  Generator gen(49);
  nn::MultiheadAttention m(decoder_options(2, true));
  m.evaluate();
  auto cache = std::make_shared<nn::KVCache>(2, 2, 2, 4, 4, DType::Float32, Device::cpu());
  m.setCache(cache, 1);
  const Tensor x = uniform({2, 5, 16}, -1, 1, gen);
  // a prompt longer than the cache
  CHECK_THROWS_WITH_AS(m.forward(x),
                       "nn.MultiheadAttention::updateOutput: expected the cached lengths plus the 5 new tokens within "
                       "max_length 4 of nn.KVCache(layers=2, batch=2, kv_heads=2, max_length=4, head_dim=4, float32 on "
                       "cpu), got lengths [0, 0]",
                       Error);
  cache->setLengths({3, 1});
  CHECK_THROWS_WITH_AS(m.forward(x.narrow(1, 0, 2)),
                       doctest::Contains("expected the cached lengths plus the 2 new tokens within max_length 4"),
                       Error);
  CHECK(cache->hostLengths() == std::vector<int64_t>{3, 1});  // a failed call changes nothing
  CHECK(cache->key(1).abs().sum().item() == 0);
  cache->reset();
  // the wrong heads, dtype or batch
  m.setCache(std::make_shared<nn::KVCache>(1, 2, 4, 8, 4, DType::Float32, Device::cpu()), 0);
  CHECK_THROWS_WITH_AS(m.forward(x),
                       "nn.MultiheadAttention::updateOutput: expected a KV cache of batch 2, kv_heads 2, head_dim 4, "
                       "float32 on cpu with a layer 0 (input float32 [2 x 5 x 16] on cpu), got nn.KVCache(layers=1, "
                       "batch=2, kv_heads=4, max_length=8, head_dim=4, float32 on cpu)",
                       Error);
  m.setCache(std::make_shared<nn::KVCache>(1, 2, 2, 8, 4, DType::Float64, Device::cpu()), 0);
  CHECK_THROWS_WITH_AS(m.forward(x),
                       doctest::Contains("got nn.KVCache(layers=1, batch=2, kv_heads=2, max_length=8, "
                                         "head_dim=4, float64 on cpu)"),
                       Error);
  m.setCache(std::make_shared<nn::KVCache>(1, 3, 2, 8, 4, DType::Float32, Device::cpu()), 0);
  CHECK_THROWS_WITH_AS(m.forward(x), doctest::Contains("expected a KV cache of batch 2"), Error);
  CHECK_THROWS_WITH_AS(m.setCache(cache, 2),
                       "nn.MultiheadAttention::setCache: expected a layer in [0, 2) of nn.KVCache(layers=2, batch=2, "
                       "kv_heads=2, max_length=4, head_dim=4, float32 on cpu), got 2",
                       Error);
  // backward in cached mode, training mode, masks
  m.setCache(cache, 0);
  const Tensor y = m.forward(x.narrow(1, 0, 3)).clone();
  CHECK_THROWS_WITH_AS(
      m.backward(x.narrow(1, 0, 3), y),
      "nn.MultiheadAttention::updateGradInput: expected a forward without a KV cache (cached decoding "
      "has no backward), got a cache attached: nn.KVCache(layers=2, batch=2, kv_heads=2, max_length=4, "
      "head_dim=4, float32 on cpu)",
      Error);
  m.setCache(nullptr, 0);
  CHECK_THROWS_WITH_AS(m.backward(x.narrow(1, 0, 3), y),
                       doctest::Contains("expected a forward without a KV cache (cached decoding has no backward), got "
                                         "a cached forward"),
                       Error);
  m.setCache(cache, 0);
  m.train();
  CHECK_THROWS_WITH_AS(m.forward(x.narrow(1, 0, 1)),
                       "nn.MultiheadAttention::updateOutput: expected evaluate() mode with a KV cache (cached decoding "
                       "is inference only), got training mode",
                       Error);
  m.evaluate();
  m.setKeyPaddingMask(zeros({2, 1}, DType::UInt8));
  CHECK_THROWS_WITH_AS(m.forward(x.narrow(1, 0, 1)),
                       doctest::Contains("expected no memory, attn_mask, key_padding_mask or key lengths with a KV "
                                         "cache (its lengths mask the keys), got a key_padding_mask"),
                       Error);
  m.setKeyPaddingMask(Tensor());
  // without the cache the module trains again
  m.setCache(nullptr, 0);
  m.train();
  m.forward(x);
  CHECK_NOTHROW(m.backward(x, x));
}
