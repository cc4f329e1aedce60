// Rotary.h: the rotary position embeddings kernel for cudnn::rotary_embedding_ (cudnn/ops/rotary.h),
// nn::rotary_embedding_'s arithmetic (Note [Rotary angles] in nn/Rotary.cpp) on the device:
// x [B x H x S x D] of any strides (no two elements at one address), rotated in place; pair i
// of a head is (i, i + R/2), or (2i, 2i + 1) when interleaved, turned by
// angle = float(offsets[b] + s) * invFreq[i] (the nn op's invFreq, nn::rotary_inv_freq; float64
// for float64 data, float32 otherwise: 16-bit data rotates in float32 and rounds once). Products
// and sums are rounded one by one, as the host's loop (no contraction into an FMA), so only
// the device's cos and sin may differ from the host's, in the last place.
// Note [Rotary offsets on the device]: offsets (int64 [B], contiguous, on x's device, or
// undefined for 0) are read by the kernel, never by the host: a decoding step's lengths stay on
// the device, and a captured CUDA graph replays with the values they hold then. So a negative
// offset cannot be refused there; its row's rotated dims become NaN (the host-side checks
// refuse negative offsets wherever the host reads them: nn's op, a CPU offsets tensor).
// One block per (b, s) row: each thread takes pairs, computes their cos and sin once and
// rotates them in every head.
#pragma once

#include <vector>

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void rotary_embedding(const tensor::Tensor& x, const tensor::Tensor& offsets, int64_t rotaryDim, bool interleaved,
                      const std::vector<double>& invFreq, double theta, bool inverse);

}  // namespace cudnn::kernels
