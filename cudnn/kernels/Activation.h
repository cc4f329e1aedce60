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
// - Abs, Square, Sqrt, Exp, Log, Power (coef = the exponent), MulConstant and AddConstant (coef =
//   the constant), which cuDNN has no mode for: nn's expressions (Note [Element-wise staples] in
//   nn/kernels/Activation.h) in acc_t<T> with CUDA's fabs, sqrt, exp, log and pow. Sqrt's and
//   Exp's backwards read the output (dy / 2y, dy y), MulConstant's and AddConstant's neither
//   (activation_backward_from_output); the others the input.
// - PReLU: y = x > 0 ? x : w[c] x over [outer x channels x inner], its input gradient, and its
//   weight gradient, one block per channel folded in a fixed order (deterministic), in acc_t<T>.
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

// mode: GELU, GELUTanh, SiLU, LeakyReLU (coef = negative_slope) or a staple, nn's enum (one list
// of modes); another mode is an error naming it. The backward of a mode that
// backward_reads_output goes through activation_backward_from_output (given y), the others'
// through activation_backward_from_input (given x).
inline bool backward_reads_output(nn::Activation mode) {
  return mode == nn::Activation::Sqrt || mode == nn::Activation::Exp || mode == nn::Activation::MulConstant ||
         mode == nn::Activation::AddConstant;
}
void activation_forward(nn::Activation mode, double coef, const tensor::Tensor& x, const tensor::Tensor& y);
void activation_backward_from_input(nn::Activation mode, double coef, const tensor::Tensor& x, const tensor::Tensor& dy,
                                    const tensor::Tensor& dx);
void activation_backward_from_output(nn::Activation mode, double coef, const tensor::Tensor& y,
                                     const tensor::Tensor& dy, const tensor::Tensor& dx);

// PReLU; every operand contiguous on one device, w of `channels` entries of x's dtype.
void prelu_forward(const tensor::Tensor& x, const tensor::Tensor& w, const tensor::Tensor& y, int64_t channels,
                   int64_t inner);
void prelu_backward(const tensor::Tensor& x, const tensor::Tensor& w, const tensor::Tensor& dy,
                    const tensor::Tensor& dx, int64_t channels, int64_t inner);
// gw[c] += scale * sum over channel c of x dy where !(x > 0).
void prelu_acc_grad_weight(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& gw, double scale,
                           int64_t outer, int64_t channels, int64_t inner);

}  // namespace cudnn::kernels
