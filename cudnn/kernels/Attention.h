// Attention.h: the row kernels of cudnn::sdpa's fallback path (cudnn/ops/attention.cpp), for
// problems cuDNN's fused attention does not take (float32, float64, odd head sizes, dropout
// masks it refuses). The score matrix is [rows x Sk] with rows = batch * heads * Sq, held in
// the accumulation type A (float32 for float32, float16 and bfloat16 data; float64 for
// float64); probabilities and score gradients are written in the data type T for the GEMMs
// that follow, as cuDNN's own graph rounds them. Masked keys (past keyLengths[b], or after
// the query with `causal`, or a -inf bias) get probability 0 exactly; a row with no key left
// gets probabilities 0 and logsumexp -inf. Grouped-query attention does not reach these
// kernels: the score matrix is laid out per query head either way.
#pragma once

#include <cstdint>

#include "tensor/Tensor.h"

namespace cudnn::kernels {

struct AttentionRows {
  int64_t batch = 0, heads = 0, sq = 0, sk = 0;
  bool causal = false;
  const int64_t* keyLengths = nullptr;  // device pointer to [batch] int64, or null
  double scale = 1;
  // an additive bias [biasBatch x biasHeads x sq x sk] (biasBatch 1 or batch, biasHeads 1 or
  // heads), contiguous, of A in the fallback's kernels (of the data type in attention_dead_rows),
  // or null; -inf removes the key whatever its score (Note [Attention masks] in nn/Attention.cpp)
  const void* bias = nullptr;
  int64_t biasBatch = 1, biasHeads = 1;
};

// bias = the mask as an additive bias of bias's dtype: `mask` a [biasBatch x biasHeads x sq x sk]
// view (stride 0 where it broadcasts) of uint8 (nonzero -> 0, zero -> -inf) or floating (converted,
// finite values clamped to bias's finite range so that no finite value becomes -inf); bias contiguous.
void attention_mask_to_bias(const tensor::Tensor& mask, const tensor::Tensor& bias);
// After the fused engine ran: rows whose every key is masked (past the lengths, causal, or a -inf
// bias of the data type's g.bias) get output 0 and logsumexp -inf. out [batch x heads x sq x dv]
// of any strides, logsumexp float32 [batch x heads x sq].
void attention_dead_rows(const AttentionRows& g, const tensor::Tensor& out, const tensor::Tensor& logsumexp);
// stats = logsumexp with -inf replaced by +inf: what the fused backward graph reads, so that a
// row with no key gets P = exp(-inf - inf) = 0 (not exp(-inf + inf) = NaN).
void attention_backward_stats(const tensor::Tensor& logsumexp, const tensor::Tensor& stats);

// probs = softmax(scale * scores) over the unmasked keys of each row, times `mask` where it
// is defined (0 or 1/(1-p)); logsumexp[r] = log sum_j exp(scale * s_rj) over unmasked j.
void attention_softmax_forward(const tensor::Tensor& scores, const AttentionRows& g, const tensor::Tensor& mask,
                               const tensor::Tensor& probs, const tensor::Tensor& logsumexp);
// probs = exp(scale * s - logsumexp) (0 where masked), times `mask` where defined: the
// forward's probabilities again, from the saved statistics.
void attention_probs(const tensor::Tensor& scores, const AttentionRows& g, const tensor::Tensor& logsumexp,
                     const tensor::Tensor& mask, const tensor::Tensor& probs);
// rowDot[r] = sum_d gradOut[r, d] * out[r, d] (in A): the softmax backward's per-row term.
void attention_row_dot(const tensor::Tensor& gradOut, const tensor::Tensor& out, const tensor::Tensor& rowDot);
// gradScores = scale * P * (gradProbs * mask - rowDot), P recomputed from scores and logsumexp:
// the gradient of the raw q.k products.
void attention_softmax_backward(const tensor::Tensor& scores, const tensor::Tensor& gradProbs, const AttentionRows& g,
                                const tensor::Tensor& logsumexp, const tensor::Tensor& rowDot,
                                const tensor::Tensor& mask, const tensor::Tensor& gradScores);
// out[i] = int32(in[i]) on the device (cuDNN takes sequence lengths as int32).
void lengths_to_int32(const int64_t* in, int32_t* out, int64_t n, int device);

}  // namespace cudnn::kernels
