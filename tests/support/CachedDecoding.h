// CachedDecoding.h: the cached-decoding check both backends' KVCache suites run: a
// MultiheadAttention (nn or its twin) decodes through an nn::KVCache what a whole-sequence
// forward gave.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "nn/KVCache.h"
#include "nn/MultiheadAttention.h"
#include "tests/support/TransformerReference.h"

namespace testing {

// Row b's tokens [from[b], from[b] + n) of X [B x T x E], as one [B x n x E] step.
inline tensor::Tensor decoding_step(const tensor::Tensor& X, const std::vector<int64_t>& from, int64_t n) {
  std::vector<tensor::Tensor> rows;
  for (size_t b = 0; b < from.size(); ++b) {
    rows.push_back(X.select(0, static_cast<int64_t>(b)).narrow(0, from[b], n).unsqueeze(0));
  }
  return tensor::cat(rows, 0);
}

// A prefill of right-padded prompts (row b's first prompts[b] tokens, padded to the longest),
// setLengths(prompts), three single-token steps (advance(1) after each), then a step of two
// tokens: every output row against `full` ([B x T x E] batch first, the whole sequence recomputed,
// any device), within `tol`. X is m's input ([B x T x E], m's dtype and device); the cache has
// maxLength T + 2, one layer, fixedShape as given.
inline void expect_decoding_matches(nn::MultiheadAttention& m, const tensor::Tensor& X, const tensor::Tensor& full,
                                    const std::vector<int64_t>& prompts, bool fixedShape, double tol) {
  using tensor::Tensor;
  const int64_t B = X.size(0), T = X.size(1);
  auto cache = std::make_shared<nn::KVCache>(1, B, m.kvHeads(), T + 2, m.headDim(), X.dtype(), X.device(),
                                             nn::KVCacheOptions{fixedShape});
  m.evaluate();
  m.setCache(cache, 0);
  const Tensor want = full.cpu();
  const int64_t P = *std::max_element(prompts.begin(), prompts.end());
  const Tensor pre = m.forward(X.narrow(1, 0, P)).cpu();
  for (int64_t b = 0; b < B; ++b) {
    INFO("prefill row ", b);
    expect_matches("prefill", pre.select(0, b).narrow(0, 0, prompts[b]), want.select(0, b).narrow(0, 0, prompts[b]),
                   tol);
  }
  cache->setLengths(prompts);
  std::vector<int64_t> at = prompts;
  for (int step = 0; step < 3; ++step) {
    const Tensor y = m.forward(decoding_step(X, at, 1)).cpu();
    for (int64_t b = 0; b < B; ++b) {
      INFO("step ", step, " row ", b, " position ", at[b]);
      expect_matches("decode", y.select(0, b), want.select(0, b).narrow(0, at[b], 1), tol);
    }
    cache->advance(1);
    for (auto& a : at) ++a;
  }
  const Tensor y = m.forward(decoding_step(X, at, 2)).cpu();
  for (int64_t b = 0; b < B; ++b) {
    INFO("chunk row ", b, " position ", at[b]);
    expect_matches("chunk", y.select(0, b), want.select(0, b).narrow(0, at[b], 2), tol);
  }
  m.setCache(nullptr, 0);
}

}  // namespace testing
