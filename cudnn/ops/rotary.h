// rotary.h: rotary position embeddings on CUDA tensors, nn::rotary_embedding_'s twin (nn/Rotary.h
// has the semantics): x [B x H x S x D] float32, float64, float16 or bfloat16 of any strides,
// rotated in place by our kernel (cudnn/kernels/Rotary.h); the offsets (undefined, or int64 [B]
// on x's device) are read by the kernel, so a captured CUDA graph replays with new offsets.
#pragma once

#include "cudnn/Functional.h"

namespace cudnn {

// Declared in cudnn/Functional.h:
// void rotary_embedding_(tensor::Tensor& x, const tensor::Tensor& offsets, const nn::RotaryOptions& options,
//                        bool inverse = false);

}  // namespace cudnn
