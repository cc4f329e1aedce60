// Activation.h: the element-wise activations behind nn::PointwiseBase, with the meaning of
// cuDNN's activation modes (coef = ClippedReLU's ceiling, ELU's alpha). The backward pass
// reads only the output y (as cuDNN's and Torch's in-place activations do), so a module
// whose input was overwritten in place still has what it needs. Arrays are contiguous;
// y may alias x and dx may alias dy. See Note [NaN and Inf].
#pragma once

#include <cstdint>

#include "nn/Activation.h"

namespace nn::kernels {

// Note [NaN and Inf]
// Both backends give the same non-finite values, element by element; the twin tests inject
// NaN, +Inf and -Inf (tests/support/TwinCheck.h, expect_twin_nonfinite_matches). The rule is
// IEEE's, as PyTorch and cuDNN's CUDNN_PROPAGATE_NAN do it: a NaN propagates, infinities
// take their limits.
// - Activations: f(NaN) = NaN (ReLU and ClippedReLU included: they are written so that the
//   comparison that fails for a NaN selects the input). relu(+Inf) = +Inf, relu(-Inf) = 0;
//   clipped(+Inf) = ceiling; tanh(+-Inf) = +-1; sigmoid(+Inf) = 1, sigmoid(-Inf) = 0;
//   elu(-Inf) = -alpha. Backward, from the output y: where y is NaN, tanh's, sigmoid's and
//   ELU's gradient is NaN (f'(NaN) is NaN), while ReLU's and ClippedReLU's is 0 (NaN > 0 is
//   false, so nothing passes). That is what cuDNN 9.14's cudnnActivationBackward gives on the
//   H100 (measured by the twin tests; PyTorch instead passes dy through a NaN in relu and
//   hardtanh). Elsewhere the derivative at the limit: dy for relu(+Inf) and elu(+Inf), 0 at
//   a clipped, saturated or zeroed output.
// - Max pooling: a NaN in a window is its maximum (the output is NaN) and takes the window's
//   gradient (the first NaN, in row-major order, when there are several); +Inf wins over
//   numbers; a window of -Inf gives -Inf. cuDNN's pooling (CUDNN_PROPAGATE_NAN) and our
//   ceil-mode kernel do the same, backward included (measured). Average pooling: the sum
//   (NaN, or +-Inf; +Inf and -Inf together give NaN); its gradient does not read the input.
// - Softmax and log-softmax (accurate mode; cuDNN's fast mode skips the max and is not
//   covered): a row (the softmax dim at one position) holding a NaN or a +Inf is NaN
//   throughout, forward and backward (x - max is NaN there); -Inf entries give 0 (log: -Inf)
//   and leave the row finite unless every entry is -Inf.
// - Batch normalization, training: a channel holding a non-finite value has NaN variance
//   (the centred square of an infinity is NaN or Inf, summed with an Inf mean NaN), so its
//   output, gradients and running variance are NaN; its mean, and so its running mean, is
//   that infinity (NaN for a NaN), as cuDNN's. Evaluation: element-wise, y = x a + b.
// - Criteria: the loss and gradient are what the formulas give: MSE's (x - t)^2 and 2 (x - t)
//   / n carry NaN and Inf; ClassNLL and CrossEntropy read the input at the target only (and
//   CrossEntropy's log-softmax row), so a NaN elsewhere in a row of ClassNLL is ignored.
// Reductions never skip NaN (no fmax): a NaN anywhere in a reduced set makes the result NaN.
// - Sum and Mean over a dimension: the sum's (+Inf and -Inf together give NaN; Mean over an
//   empty dimension is 0/0 = NaN, as PyTorch's). Max and Min: a NaN in the reduced set is the
//   result and takes the gradient (the first NaN), else the first index of the extremum
//   (PyTorch's choice on ties); the gradient goes to that one index (a NaN gradOutput too).
// - Normalize: a row holding a NaN is NaN throughout; an Inf makes the norm Inf, so the row
//   is NaN at the Inf (Inf / Inf) and 0 elsewhere, forward and backward as the formulas give.
// - PReLU: x > 0 ? x : w x, false for a NaN (NaN * w = NaN); its weight gradient sums x dy
//   over x <= 0 and NaN x, so a NaN input makes its channel's weight gradient NaN.

// Note [Element-wise staples]
// Abs, Square, Sqrt, Exp, Log, Power, MulConstant and AddConstant are Torch's modules with
// PyTorch's derivatives (torch/csrc/autograd/derivatives.yaml), where the two differ at a
// point: abs'(0) = sgn(0) = 0 (Torch: 1), and sgn(NaN) = 0, so the gradient there is dy * 0;
// sqrt' = dy / (2 y), +-Inf at y = +-0 (Torch's THNN returns 0 there); pow's gradient is zero
// everywhere for p = 0 (Torch: 0 * x^-1, NaN at 0), else dy (p x^(p-1)). log' = dy / x,
// exp' = dy y, square' = dy (2 x). Forward values are libm's (std::abs, sqrt, exp, log, pow)
// on the host, CUDA's on the device (a few ulp apart in float32), so non-finite values are
// IEEE's on both: log(0) = -Inf, log(-1) = sqrt(-1) = NaN, exp(-Inf) = 0, pow(-Inf, 2.5) =
// +Inf. Sqrt and Exp take their gradient from the output (in place allowed), MulConstant
// and AddConstant from neither (dy c, dy); Abs, Square, Log and Power read the input and
// refuse inplace. In place, MulConstant and AddConstant leave the input holding the output
// after backward: Torch's undo the operation on the input in updateGradInput (x / c, x - c),
// which is not exact in floating point and divides by zero for c = 0; ours, as every
// in-place activation here, do not.

// GELU (exact, erf), GELUTanh (PyTorch's approximate='tanh'), SiLU (x sigmoid(x)) and
// LeakyReLU (coef = negative_slope) came with the Transformer modules. GELU and SiLU are not
// invertible, so their backward reads the input x (activation_needs_input); so does
// LeakyReLU's with a negative slope (the output's sign no longer tells the input's).
// Non-finite values for them are PyTorch's float64 results (tests/nn/test_GELU.cpp says which).
// `Activation` is nn::Activation (nn/Activation.h), the enumeration both backends share.

// Whether the backward pass of `mode` needs the input (activation_backward_from_input).
bool activation_needs_input(Activation mode, double coef);

template <class T>
void activation_forward(Activation mode, double coef, const T* x, T* y, int64_t n);
// From the output y, for the modes where !activation_needs_input.
template <class T>
void activation_backward(Activation mode, double coef, const T* y, const T* dy, T* dx, int64_t n);
// From the input x, for every mode that activation_needs_input (and LeakyReLU in general).
template <class T>
void activation_backward_from_input(Activation mode, double coef, const T* x, const T* dy, T* dx, int64_t n);

// PReLU over x viewed as [outer x channels x inner] (row-major), weight w of `channels`
// entries (channels = 1: one shared weight): y = x > 0 ? x : w[c] x.
template <class T>
void prelu_forward(const T* x, const T* w, T* y, int64_t outer, int64_t channels, int64_t inner);
// dx = x > 0 ? dy : w[c] dy; dx may alias dy.
template <class T>
void prelu_backward(const T* x, const T* w, const T* dy, T* dx, int64_t outer, int64_t channels, int64_t inner);
// gw[c] += scale * sum of x dy over the entries of channel c where !(x > 0), summed in double
// for float (in channel order, then outer, then inner: one fixed order).
template <class T>
void prelu_acc_grad_weight(const T* x, const T* dy, T* gw, double scale, int64_t outer, int64_t channels,
                           int64_t inner);

}  // namespace nn::kernels
