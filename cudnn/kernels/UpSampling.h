// UpSampling.h: the CUDA kernels of the up-sampling twins (SpatialUpSamplingNearest,
// SpatialUpSamplingBilinear), over 3-d [C x H x W] or 4-d [N x C x H x W] tensors of any
// strides in one floating dtype; the output's size is y's. The index arithmetic is
// nn/kernels/SpatialIndex.h's (exact integer source coordinates), shared with
// nn/kernels/UpSampling.cpp; interpolation weights and sums in the dtype's accumulation type.
//   upsample_forward   one thread per output element
//   upsample_backward  one thread per gradInput element, summing the outputs that read it
//                      (Note [Backward as a gather]): deterministic, no atomics
#pragma once

#include "nn/kernels/UpSampling.h"
#include "tensor/Tensor.h"

namespace cudnn::kernels {

void upsample_forward(const tensor::Tensor& x, const tensor::Tensor& y, nn::kernels::Resampling r);
void upsample_backward(const tensor::Tensor& gy, const tensor::Tensor& gx, nn::kernels::Resampling r);

}  // namespace cudnn::kernels
