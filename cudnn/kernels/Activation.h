// Activation.h: the activation kernels the twins run instead of cudnnActivation*.
// - ReLU, both passes, for ActivationPlan (Note [ReLU kernels]): cuDNN's generic activation kernels moved one
//   element per thread, 1.6 ms of a 12 ms ResNet-50 float16 step on an H100, against PyTorch's
//   0.9 ms; these go through the tensor layer's packed element-wise launch.
// - ClippedReLU's gradient from the output: cuDNN's CLIPPED_RELU backward reads the input x
//   (pass-through where 0 < x <= ceiling); after an in-place forward x holds y, where clipped
//   entries equal the ceiling and would pass.
// The formulas are nn::kernels' (Note [NaN and Inf] in nn/kernels/Activation.h):
//   relu:     y = 0 where x <= 0, else x (a NaN stays NaN, -0 gives +0);
//   relu':    dx = dy where y > 0, else 0 (a NaN y gives 0, as cuDNN's own backward);
//   clipped': dx = dy where 0 < y < ceiling (the ceiling rounded to y's dtype), else 0.
// The backwards read the output alone, so they serve in-place modules too.
// Operands: one shape and floating dtype, dense in one memory format, on one CUDA device;
// y may be x and dx may be dy.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void relu_forward(const tensor::Tensor& x, const tensor::Tensor& y);
void relu_backward_from_output(const tensor::Tensor& y, const tensor::Tensor& dy, const tensor::Tensor& dx);
void clipped_relu_backward_from_output(const tensor::Tensor& y, const tensor::Tensor& dy, const tensor::Tensor& dx,
                                       double ceiling);

}  // namespace cudnn::kernels
