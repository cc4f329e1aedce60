// LRN.h: the backward of cross-channel local response normalisation, ours rather than cuDNN's
// (Note [LRN backward] in LRN.cu). x, dy and dx contiguous [N x C x H x W], one floating dtype.
//   lrn_backward  dx_c = dy_c s_c^-beta - 2 alpha beta / size * x_c * sum over the channels j
//                 whose window holds c (j in [c - size / 2, c + (size - 1) / 2]) of
//                 dy_j s_j^-beta x_j / s_j, with s_j = k + alpha / size * (sum of x_i^2 over
//                 i in [j - (size - 1) / 2, j + size / 2]): nn::SpatialCrossMapLRN's.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void lrn_backward(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& dx, int size, double alpha,
                  double beta, double k);

}  // namespace cudnn::kernels
