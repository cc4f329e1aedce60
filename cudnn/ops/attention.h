// attention.h: scaled dot-product attention on CUDA tensors, the twin of nn::sdpa
// (nn/Attention.h) with the same arguments, options and saved state. float16 and bfloat16
// problems run cuDNN's fused flash attention (forward and backward) where cuDNN takes them
// (Note [The attention graph] in ops/attention_graph.h); everything else (float32, float64,
// head sizes that are not multiples of 8, a refused graph, a workspace past the limit, the
// flag attention.fused=false) runs cuBLAS batched GEMMs around our softmax kernels
// (cudnn/kernels/Attention.h), saying why under verbose=true. Both paths keep the same
// statistics (logsumexp in float32, float64 for float64 data), so a backward may take the
// other path than its forward. The dropout mask is drawn from the device's generator as
// nn::sdpa draws it on the CPU. options.mask becomes an additive bias of the data type for the
// fused graph (booleans 0 / -inf) and of the accumulation type for the fallback's kernels; k and
// v may have fewer heads (grouped-query attention), which both paths take without a copy.
#pragma once

#include <string>

#include "cudnn/Functional.h"
#include "nn/Attention.h"

namespace cudnn {

// sdpa, sdpa_backward and sdpa_last_path: cudnn/Functional.h.
// The attention plans (and refusals) in the plan cache now (tests: bounded by conv.cache_limit).
size_t sdpa_plans_cached();

// cudnn::sdpa with the key lengths already in the int32 form cuDNN reads (`keyLengths32`: [b]
// 4-byte elements on the inputs' device holding options.keyLengths' values), for the one caller
// that makes them once for many calls: cudnn::MultiheadAttention's cached decode step, from the
// KV cache's step words (nn::KVCache::stepWords). Internal, not in Functional.h: cuDNN reads these
// lengths unchecked, so they come only from the cache's own conversion of checked lengths.
tensor::Tensor sdpa_with_int32_lengths(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                                       const nn::SdpaOptions& options, nn::SdpaSaved* saved, const tensor::Tensor& into,
                                       const tensor::Tensor& keyLengths32);

}  // namespace cudnn
