// KVCache.h: the cache write of cudnn::MultiheadAttention's cached forward (nn/KVCache.h). k and v
// [B x Hkv x S x D] (any strides, one floating dtype) go into cacheK and cacheV [B x Hkv x
// maxLength x D] (any strides) at positions lengths[b] + s of row b, lengths int64 [B] on their
// device and read by the kernel, so a captured CUDA graph of a decode step writes where the
// lengths say at replay. A position at or past maxLength is skipped (the host checks before).
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void kv_cache_write(const tensor::Tensor& k, const tensor::Tensor& v, const tensor::Tensor& cacheK,
                    const tensor::Tensor& cacheV, const tensor::Tensor& lengths);

}  // namespace cudnn::kernels
