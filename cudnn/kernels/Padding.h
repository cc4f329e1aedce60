// Padding.h: the CUDA kernels of the spatial padding twins, over 3-d [C x H x W] or 4-d
// [N x C x H x W] tensors of any strides in one floating dtype (float32, float64, float16,
// bfloat16); the index arithmetic is nn/kernels/SpatialIndex.h's, so they read and sum what
// nn/kernels/Padding.cpp does.
//   spatial_pad_forward   one thread per output element, y = x at its source, 0 where a constant
//                         pad reads none
//   spatial_pad_backward  one thread per gradInput element, the sum of gy over the outputs
//                         that read it, in increasing order (Note [Backward as a gather]):
//                         deterministic, no atomics
// Threads walk the output (gradInput) in its memory order when it is channels-last.
#pragma once

#include "nn/kernels/Padding.h"
#include "tensor/Tensor.h"

namespace cudnn::kernels {

void spatial_pad_forward(const tensor::Tensor& x, const tensor::Tensor& y, nn::kernels::PadMode mode,
                         nn::kernels::SpatialPads pads);
void spatial_pad_backward(const tensor::Tensor& gy, const tensor::Tensor& gx, nn::kernels::PadMode mode,
                          nn::kernels::SpatialPads pads);

}  // namespace cudnn::kernels
