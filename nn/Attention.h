// Attention.h: scaled dot-product attention, a functional op (the CPU reference; the cuDNN
// twin, cudnn::sdpa in cudnn/ops/attention.h, implements the same interface):
//   out[b, h, i] = sum_j P_ij v[b, h, j],  P_i = softmax_j(scale <q_i, k_j>) over unmasked j,
// with optional dropout on P (scaled by 1/(1-p)). float32 or float64 CPU tensors of any
// strides (packed copies are taken). See Note [Attention's saved state] in Attention.cpp.
#pragma once

#include <string>

#include "tensor/Tensor.h"

namespace nn {

struct SdpaOptions {
  double scale = 0;     // 0: 1/sqrt(head_dim); else must be finite and > 0
  bool causal = false;  // PyTorch's is_causal (top-left aligned): key j masked for query i when j > i
  tensor::Tensor
      keyLengths;  // undefined, or int64 [batch] (any device): keys j >= keyLengths[b] masked; each in [1, Sk]
  double dropout = 0;   // probability of zeroing an attention probability, in [0, 1); 0 = none
  tensor::Tensor mask;  // undefined, or broadcastable to [B x H x Sq x Sk] as [Sq x Sk], [B x 1 x Sq x Sk],
                        // [B x H x Sq x Sk] (also [1 x 1 x Sq x Sk], [B x 1 x 1 x Sk]): uint8 = boolean,
                        // nonzero = attend (F.scaled_dot_product_attention's convention); or floating
                        // (the data's dtype or float32) = added to the scores (additive, -inf masks).
                        // See Note [Attention masks] in Attention.cpp.
};

// What forward keeps for backward.
struct SdpaSaved {
  tensor::Tensor
      logsumexp;  // [batch x heads x Sq] float32 (float64 for float64 inputs): log sum_j exp(s_ij) over unmasked j
  tensor::Tensor
      dropoutMask;  // undefined without dropout; else [batch x heads x Sq x Sk] of the input dtype holding 0 or 1/(1-p)
};

// q [B x H x Sq x D], k [B x Hkv x Sk x D], v [B x Hkv x Sk x Dv] -> out [B x H x Sq x Dv], same dtype
// and device; Hkv divides H (grouped-query attention: query head h reads kv head h / (H / Hkv)).
// A query row left with no key by the mask gives 0 (logsumexp -inf): Note [Attention masks].
// The dropout mask is drawn with bernoulli_ from tensor::default_generator() on the inputs'
// device (as nn::Dropout), so both backends draw the same mask from one seed.
tensor::Tensor sdpa(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                    const SdpaOptions& options = {}, SdpaSaved* saved = nullptr);

struct SdpaGrads {
  tensor::Tensor q, k, v;
};
// The gradients for gradOut (out's shape), from forward's `out` and `saved` (which must have
// been passed to sdpa). Contiguous tensors of q's, k's and v's shapes (gk, gv with Hkv heads: the
// sums over each kv head's group of query heads).
SdpaGrads sdpa_backward(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                        const tensor::Tensor& out, const tensor::Tensor& gradOut, const SdpaOptions& options,
                        const SdpaSaved& saved);

// The checks both backends share (shapes, dtypes, scale, lengths, dropout), throwing with `where`
// ("nn.sdpa: ", "nn.MultiheadAttention::updateOutput: ") at the start of the message.
void check_sdpa_arguments(const std::string& where, const tensor::Tensor& q, const tensor::Tensor& k,
                          const tensor::Tensor& v, const SdpaOptions& options);

// The scale in effect: options.scale, or 1/sqrt(head_dim) for 0.
double sdpa_scale(const SdpaOptions& options, int64_t headDim);

}  // namespace nn
