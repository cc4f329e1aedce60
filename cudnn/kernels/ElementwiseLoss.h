// ElementwiseLoss.h: the GPU kernels of the elementwise criteria (cudnn::ElementwiseCriterionBase):
// the per-element terms of nn/kernels/ElementwiseLoss.h over contiguous input and target of one
// dtype, weights and positive weights (undefined, or float64 contiguous, read cyclically: their
// shape ends the input's), in double.
#pragma once

#include "nn/kernels/ElementwiseLoss.h"
#include "tensor/Tensor.h"

namespace cudnn::kernels {

// The sum of the per-element losses, in float64, deterministic (a fixed-order reduction); one host read.
double elementwise_loss_sum(const nn::kernels::ElementLossParams& p, const tensor::Tensor& x, const tensor::Tensor& y,
                            const tensor::Tensor& w, const tensor::Tensor& pw);
// dx_i = dl_i/dx_i * scale, in x's dtype (dx contiguous, as many elements as x).
void elementwise_loss_grad(const nn::kernels::ElementLossParams& p, const tensor::Tensor& x, const tensor::Tensor& y,
                           const tensor::Tensor& w, const tensor::Tensor& pw, double scale, const tensor::Tensor& dx);

}  // namespace cudnn::kernels
