// Activation.h: the activation kernels the twins run instead of cudnnActivation*.
// - ReLU, both passes, for ActivationPlan (Note [ReLU kernels]): cuDNN's generic activation kernels moved one
//   element per thread, 1.6 ms of a 12 ms ResNet-50 float16 step on an H100, against PyTorch's
//   0.9 ms; these go through the tensor layer's packed element-wise launch.
// - ClippedReLU's gradient from the output: cuDNN's CLIPPED_RELU backward reads the input x
//   (pass-through where 0 < x <= ceiling); after an in-place forward x holds y, where clipped
//   entries equal the ceiling and would pass.
// - GELU (erf and tanh forms), SiLU and LeakyReLU, both passes, which cuDNN's legacy activation
//   API lacks: the backwards read the input x (GELU and SiLU are not invertible; LeakyReLU's x may
//   be y in place, where y > 0 exactly where x > 0 for a slope >= 0).
// The formulas are nn::kernels' (Note [NaN and Inf] in nn/kernels/Activation.h):
//   relu:     y = 0 where x <= 0, else x (a NaN stays NaN, -0 gives +0);
//   relu':    dx = dy where y > 0, else 0 (a NaN y gives 0, as cuDNN's own backward);
//   clipped': dx = dy where 0 < y < ceiling (the ceiling rounded to y's dtype), else 0.
//   gelu, gelu_tanh, silu, leaky_relu: nn's expressions term for term, in acc_t<T> (float for
//   16-bit data) with CUDA's erf/exp/tanh (a few ulp from the host's libm, so float32 agrees
//   within rounding); leaky_relu's x > 0 ? x : x * slope, and its backward, are nn's bits.
// relu's and clipped relu's backwards read the output alone, so they serve in-place modules too.
// Operands: one shape and floating dtype, dense in one memory format, on one CUDA device;
// y may be x and dx may be dy.
#pragma once

#include "nn/kernels/Activation.h"
#include "tensor/Tensor.h"

namespace cudnn::kernels {

void relu_forward(const tensor::Tensor& x, const tensor::Tensor& y);
void relu_backward_from_output(const tensor::Tensor& y, const tensor::Tensor& dy, const tensor::Tensor& dx);
void clipped_relu_backward_from_output(const tensor::Tensor& y, const tensor::Tensor& dy, const tensor::Tensor& dx,
                                       double ceiling);

// mode: GELU, GELUTanh, SiLU or LeakyReLU (coef = negative_slope), nn's enum (one list of modes);
// another mode is an error naming it.
void activation_forward(nn::Activation mode, double coef, const tensor::Tensor& x, const tensor::Tensor& y);
void activation_backward_from_input(nn::Activation mode, double coef, const tensor::Tensor& x, const tensor::Tensor& dy,
                                    const tensor::Tensor& dx);

}  // namespace cudnn::kernels
