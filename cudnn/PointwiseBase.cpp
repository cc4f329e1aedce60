// PointwiseBase.cpp: buffers (in place or not) around ActivationPlan, as nn::PointwiseBase.
#include "cudnn/PointwiseBase.h"

#include "cudnn/kernels/Activation.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
Activation mode_of(nn::PointwiseBase::Activation a) {
  using A = nn::PointwiseBase::Activation;
  switch (a) {
    case A::ReLU: return Activation::Relu;
    case A::ClippedReLU: return Activation::ClippedRelu;
    case A::Tanh: return Activation::Tanh;
    case A::Sigmoid: return Activation::Sigmoid;
    case A::ELU: return Activation::Elu;
  }
  return Activation::Relu;
}

// Element-wise work sees one flat, contiguous vector: any rank, one descriptor shape.
Tensor flat(const Tensor& t) { return t.view({t.numel()}); }
}  // namespace

void PointwiseCompute::forward(nn::PointwiseBase& m, const Tensor& input) {
  const Activation mode = mode_of(m.activation());
  if (m.inplace) {
    m.output = input;
    if (input.numel() == 0) return;
    if (input.is_contiguous()) {
      plan_.forward(mode, m.coef(), flat(input), flat(input));
    } else {
      // compute on a packed copy, then write through the caller's view
      const Tensor packed = input.contiguous();
      plan_.forward(mode, m.coef(), flat(packed), flat(packed));
      Tensor(input).copy_(packed);
    }
    return;
  }
  const Tensor x = input.contiguous();
  if (m.output.shares_storage(input)) m.output = Tensor();  // was in place: never write into the input
  nn::ensure(m.output, x.sizes(), x);
  if (x.numel() == 0) return;
  plan_.forward(mode, m.coef(), flat(x), flat(m.output));
}

void PointwiseCompute::backward(nn::PointwiseBase& m, const Tensor& input, const Tensor& gradOutput) {
  const Activation mode = mode_of(m.activation());
  const Tensor y = m.output.contiguous();
  // In place the input was overwritten by y: hand cuDNN y as x too (Note [In-place activation gradients]).
  const Tensor x = m.inplace ? y : input.contiguous();
  if (m.inplace && gradOutput.is_contiguous()) {
    m.gradInput = gradOutput;
  } else {
    if (m.gradInput.shares_storage(gradOutput)) m.gradInput = Tensor();
    nn::ensure(m.gradInput, gradOutput.sizes(), gradOutput);
  }
  if (y.numel() == 0) return;
  const Tensor dy = gradOutput.contiguous();
  if (m.inplace && mode == Activation::ClippedRelu) {
    kernels::clipped_relu_backward_from_output(y, dy, m.gradInput, m.coef());
    return;
  }
  plan_.backward(mode, m.coef(), flat(x), flat(y), flat(dy), flat(m.gradInput));
}

}  // namespace cudnn::detail
