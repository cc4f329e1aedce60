// UpSampling.h: the CPU kernels of SpatialUpSamplingNearest and SpatialUpSamplingBilinear over
// 3-d [C x H x W] or 4-d [N x C x H x W] float32 / float64 tensors of any strides, the output's
// size taken from y; the index arithmetic is nn/kernels/SpatialIndex.h's, shared with the CUDA
// kernels.
//   upsample_forward   nearest: y[oh][ow] = x[oh H / OH][ow W / OW]; bilinear: PyTorch's
//                      F.interpolate(mode='bilinear', align_corners) over the four taps
//   upsample_backward  gx = the sum of gy times each output's weight on the element, a gather
//                      (Note [Backward as a gather])
#pragma once

#include "tensor/Tensor.h"

namespace nn::kernels {

struct Resampling {
  bool bilinear = false;
  bool alignCorners = false;  // bilinear only
};

void upsample_forward(const tensor::Tensor& x, const tensor::Tensor& y, Resampling r);
void upsample_backward(const tensor::Tensor& gy, const tensor::Tensor& gx, Resampling r);

}  // namespace nn::kernels
