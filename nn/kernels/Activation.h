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

}  // namespace nn::kernels
