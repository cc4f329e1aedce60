// Pool.h: what our pooling kernels (PoolCeil.cu, PoolMaxBackward.cu) share with cudnn/ops/pool.h,
// which calls them: the pooling parameters and the kernels' entry points.
#pragma once

#include "cudnn/Functional.h"
#include "tensor/Tensor.h"

namespace cudnn {

using tensor::Shape;
using tensor::Tensor;

// PoolMode and PoolParams: cudnn/Functional.h (public).

namespace kernels {
// Torch-semantics pooling for ceil-mode shapes cuDNN cannot size (contiguous NC(D)HW).
void pool_ceil_forward(const Tensor& x, const Tensor& y, const PoolParams& p);
void pool_ceil_backward(const Tensor& x, const Tensor& dy, const Tensor& dx, const PoolParams& p);
// Max pooling's gradient of dense channels-last [N x C x (D) x H x W] x, dy and dx, any window,
// stride, padding, floor or ceil sizes: nn's gradient exactly (Note [Channels-last max-pooling
// backward] in PoolMaxBackward.cu). applies: a max mode and all three channels-last.
bool channels_last_max_backward_applies(const Tensor& x, const Tensor& dy, const Tensor& dx, const PoolParams& p);
void max_pool_backward_channels_last(const Tensor& x, const Tensor& dy, const Tensor& dx, const PoolParams& p);
}  // namespace kernels

}  // namespace cudnn
