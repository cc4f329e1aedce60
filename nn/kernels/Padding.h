// Padding.h: the CPU kernels of the spatial paddings (SpatialZeroPadding,
// SpatialReflectionPadding, SpatialReplicationPadding), over 3-d [C x H x W] or 4-d
// [N x C x H x W] float32 / float64 tensors of any strides; the index arithmetic is
// nn/kernels/SpatialIndex.h's, shared with the CUDA kernels.
//   spatial_pad_forward   y[oh][ow] = x[src(oh)][src(ow)] (value where a constant pad reads none)
//   spatial_pad_backward  gx[i][j] = sum of gy over the outputs reading (i, j), a gather
//                         (Note [Backward as a gather])
// Pads are left, right, top, bottom; negative ones crop.
#pragma once

#include "nn/kernels/SpatialIndex.h"
#include "tensor/Tensor.h"

namespace nn::kernels {

struct SpatialPads {
  int64_t l, r, t, b;
};

void spatial_pad_forward(const tensor::Tensor& x, const tensor::Tensor& y, PadMode mode, SpatialPads pads,
                         double value);
void spatial_pad_backward(const tensor::Tensor& gy, const tensor::Tensor& gx, PadMode mode, SpatialPads pads);

}  // namespace nn::kernels
