// attention.h: scaled dot-product attention on CUDA tensors, the twin of nn::sdpa
// (nn/Attention.h) with the same arguments, options and saved state. float16 and bfloat16
// problems run cuDNN's fused flash attention (forward and backward) where cuDNN takes them
// (Note [The attention graph] in ops/attention_graph.h); everything else (float32, float64,
// head sizes that are not multiples of 8, a refused graph, a workspace past the limit, the
// flag attention.fused=false) runs cuBLAS batched GEMMs around our softmax kernels
// (cudnn/kernels/Attention.h), saying why under verbose=true. Both paths keep the same
// statistics (logsumexp in float32, float64 for float64 data), so a backward may take the
// other path than its forward. The dropout mask is drawn from the device's generator as
// nn::sdpa draws it on the CPU.
#pragma once

#include <string>

#include "nn/Attention.h"

namespace cudnn {

// `out`, when defined, is where the result goes: a [B x H x Sq x Dv] tensor of q's dtype and
// device, of any strides (a head view of a module's token rows); the fused engines write it in
// place when its strides suit them, so no second copy of the output exists. Returns it.
tensor::Tensor sdpa(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                    const nn::SdpaOptions& options = {}, nn::SdpaSaved* saved = nullptr,
                    const tensor::Tensor& out = tensor::Tensor());
// `into`, when given, holds where the gradients go (q's, k's and v's shapes, any strides), as
// `out` above; returned then.
nn::SdpaGrads sdpa_backward(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                            const tensor::Tensor& out, const tensor::Tensor& gradOut, const nn::SdpaOptions& options,
                            const nn::SdpaSaved& saved, const nn::SdpaGrads* into = nullptr);

// The path the last sdpa (or sdpa_backward) on this thread took: "fused attention engine N",
// or "fallback: <why>". For tests and benchmarks.
const std::string& sdpa_last_path(bool backward = false);
// The attention plans (and refusals) in the plan cache now (tests: bounded by conv.cache_limit).
size_t sdpa_plans_cached();

}  // namespace cudnn
