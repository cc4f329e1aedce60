// PointwiseBase.cpp: buffers (in place or not) around ActivationPlan, as nn::PointwiseBase.
#include "cudnn/PointwiseBase.h"

#include <memory>

#include "cudnn/core/Layout.h"
#include "cudnn/kernels/Activation.h"
#include "cudnn/ops/activation.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
// Element-wise work sees one flat vector in memory order: any rank, one descriptor shape.
// Every operand of a pass is dense in one memory format (row-major or channels-last: Note
// [Channels-last twins]), so the flat vectors pair up element for element.
Tensor flat(const Tensor& t) { return tensor::flat_view(t); }
}  // namespace

PointwiseCompute::PointwiseCompute() : plan_(std::make_unique<ActivationPlan>()) {}
PointwiseCompute::~PointwiseCompute() = default;

void PointwiseCompute::run_forward(const nn::PointwiseBase& m, const Tensor& x, const Tensor& y) {
  if (ActivationPlan::runs(m.activation())) return plan_->forward(m.activation(), m.coef(), x, y);
  kernels::activation_forward(m.activation(), m.coef(), x, y);
}

void PointwiseCompute::forward(nn::PointwiseBase& m, const Tensor& input) {
  if (m.inplace) {
    m.output = input;
    if (input.numel() == 0) return;
    if (input.is_contiguous() || input.is_contiguous(activation_format(input))) {
      run_forward(m, flat(input), flat(input));
    } else {
      // compute on a packed copy, then write through the caller's view
      const Tensor packed = input.contiguous(activation_format(input));
      run_forward(m, flat(packed), flat(packed));
      Tensor(input).copy_(packed);
    }
    return;
  }
  const tensor::MemoryFormat format = activation_format(input);
  const Tensor x = as_format(input, format);
  if (m.output.shares_storage(input)) m.output = Tensor();  // was in place: never write into the input
  nn::ensure(m.output, x.sizes(), x, format);
  if (x.numel() == 0) return;
  run_forward(m, flat(x), flat(m.output));
}

void PointwiseCompute::backward(nn::PointwiseBase& m, const Tensor& input, const Tensor& gradOutput) {
  const nn::Activation mode = m.activation();
  // x, y, dy and dx share one layout: the output's (the input's, Note [Channels-last twins])
  const tensor::MemoryFormat format = tensor::suggest_memory_format(m.output);
  const Tensor y = as_format(m.output, format);
  // In place the input was overwritten by y: hand cuDNN y as x too (Note [In-place activation gradients]);
  // of our kernels' modes that read x only LeakyReLU runs in place, with a slope >= 0, where y > 0 exactly
  // where x > 0; Sqrt, Exp, MulConstant and AddConstant read y or nothing (kernels::backward_reads_output).
  const Tensor x = m.inplace ? y : as_format(input, format);
  if (m.inplace && gradOutput.is_contiguous(format)) {
    m.gradInput = gradOutput;
  } else {
    if (m.gradInput.shares_storage(gradOutput)) m.gradInput = Tensor();
    nn::ensure(m.gradInput, gradOutput.sizes(), gradOutput, format);
  }
  if (y.numel() == 0) return;
  const Tensor dy = as_format(gradOutput, format);
  if (!ActivationPlan::runs(mode)) {
    if (kernels::backward_reads_output(mode)) {  // Sqrt, Exp, MulConstant, AddConstant: in place too
      kernels::activation_backward_from_output(mode, m.coef(), flat(y), flat(dy), flat(m.gradInput));
    } else {
      kernels::activation_backward_from_input(mode, m.coef(), flat(x), flat(dy), flat(m.gradInput));
    }
    return;
  }
  if (m.inplace && mode == nn::Activation::ClippedReLU) {
    kernels::clipped_relu_backward_from_output(flat(y), flat(dy), flat(m.gradInput), m.coef());
    return;
  }
  plan_->backward(mode, m.coef(), flat(x), flat(y), flat(dy), flat(m.gradInput));
}

}  // namespace cudnn::detail
