// BatchNormalization.cpp: buffers and the training/evaluation split around BatchNormPlan,
// shared by the three batch-normalisation twins.
#include "cudnn/BatchNormalization.h"

#include <sstream>

#include "cudnn/core/Layout.h"
#include "cudnn/kernels/Activation.h"
#include "cudnn/kernels/BatchNorm.h"
#include "cudnn/ops/batch_norm.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
std::string where_of(const nn::Module& m, const char* method) { return m.type_name() + "::" + method + ": "; }

// What cuDNN is handed: [N x C x S] for row-major data; channels-last data as it is (4-d or
// 5-d, NHWC strides), which cuDNN recognises as packed NHWC (Note [Channels-last twins]).
Tensor as_cudnn(const Tensor& t, const Shape& s3, tensor::MemoryFormat format) {
  return format == tensor::MemoryFormat::ChannelsLast ? t : t.view(s3);
}

// A constant [C] tensor of the statistics' dtype and device (affine = false).
const Tensor& constant(Tensor& buf, const nn::BatchNormalization& m, double value) {
  const Tensor& like = m.running_mean;
  if (!buf.defined() || buf.dtype() != like.dtype() || buf.device() != like.device() || buf.numel() != m.nOutput) {
    buf = tensor::full({m.nOutput}, value, like.dtype(), like.device());
  }
  return buf;
}

// A fused tail's operand (the addend, or the fused output backward reads) must match x in
// shape, dtype and device: cuDNN reads it with x's descriptor, and it comes from a public field
// or another module (Note [Parameters are checked where they are used] in nn/Buffers.h).
void check_like_input(const nn::Module& m, const char* method, const char* name, const Tensor& t, const Tensor& x) {
  if (t.defined() && t.sizes() == x.sizes() && t.dtype() == x.dtype() && t.device() == x.device()) return;
  throw tensor::Error(where_of(m, method) + "expected " + name + " like the input " + x.description() + ", got " +
                      (t.defined() ? t.description() : std::string("an undefined tensor")));
}

BatchNormMode mode(const nn::BatchNormalization& m) {
  return m.nDim == 2 ? BatchNormMode::PerActivation : BatchNormMode::Spatial;
}
}  // namespace

BatchNormCompute::BatchNormCompute() : plan_(std::make_unique<BatchNormPlan>()) {}
BatchNormCompute::~BatchNormCompute() = default;

const Tensor& BatchNormCompute::gamma(nn::BatchNormalization& m) { return m.affine ? m.weight : constant(ones_, m, 1); }
const Tensor& BatchNormCompute::beta(nn::BatchNormalization& m) { return m.affine ? m.bias : constant(zeros_, m, 0); }

void BatchNormCompute::check(const nn::BatchNormalization& m, const Tensor& input, const char* method) const {
  const DType want = batch_norm_param_dtype(input.dtype());
  if (m.running_mean.dtype() != want) {
    const bool f64 = m.running_mean.dtype() == DType::Float64;
    throw tensor::Error(where_of(m, method) + "expected " + (f64 ? "float64" : "float32, float16 or bfloat16") +
                        " input for the module's " + tensor::name(m.running_mean.dtype()) + " statistics, got " +
                        input.description() + " (convert the module with .to(dtype))");
  }
  if (!(m.eps >= CUDNN_BN_MIN_EPSILON)) {
    std::ostringstream msg;
    msg << where_of(m, method) << "expected eps >= " << CUDNN_BN_MIN_EPSILON << " (CUDNN_BN_MIN_EPSILON), got "
        << m.eps;
    throw tensor::Error(msg.str());
  }
}

void BatchNormCompute::forward(nn::BatchNormalization& m, const nn::BatchNormalization::Layout& l, const Tensor& input,
                               const BatchNormTail& tail) {
  const tensor::MemoryFormat format = activation_format(input);
  const Tensor x = as_format(input, format);
  if (tail.addend.defined())
    check_like_input(m, "updateOutput", "the addend (the residual's shortcut output)", tail.addend, x);
  Tensor& out = tail.out ? *tail.out : m.output;
  nn::ensure(out, x.sizes(), x, format);
  // counted as nn counts it, empty batches included (Note [num_batches_tracked]); with a momentum,
  // by the training pass on the device (Note [The count in the fold] in cudnn/kernels/BatchNorm.h)
  double factor = m.momentum;
  Tensor count;
  if (m.isTraining()) {
    const Tensor& n = m.num_batches_tracked;
    if (!m.cumulativeAverage && n.defined() && n.dtype() == DType::Int64 && n.numel() == 1 &&
        n.device() == x.device()) {
      count = n;
    } else {
      factor = m.countBatch();
    }
  }
  if (x.numel() == 0) {
    if (count.defined()) count.add_(1.0);
    return;
  }
  const Shape s3{l.N, l.C, l.S};
  const Tensor y = as_cudnn(out, s3, format);
  // a fused tail: the sum and the relu (Note [Batch norm epilogues] in cudnn/ops/batch_norm.cpp)
  BatchNormEpilogue epilogue{.relu = tail.out != nullptr, .z = Tensor()};
  if (tail.addend.defined()) epilogue.z = as_cudnn(as_format(tail.addend, format), s3, format);
  if (m.isTraining()) {
    nn::ensure(m.save_mean, {l.C}, m.running_mean);
    nn::ensure(m.save_invstd, {l.C}, m.running_mean);
    plan_->forward_train(mode(m), as_cudnn(x, s3, format), y, gamma(m), beta(m), factor, m.running_mean, m.running_var,
                         m.eps, m.save_mean, m.save_invstd, epilogue, count);
  } else {
    plan_->forward_inference(mode(m), as_cudnn(x, s3, format), y, gamma(m), beta(m), m.running_mean, m.running_var,
                             m.eps);
    if (epilogue.z.defined()) Tensor(y).add_(epilogue.z);
    if (epilogue.relu) kernels::relu_forward(y, y);
  }
}

void BatchNormCompute::backward(nn::BatchNormalization& m, const nn::BatchNormalization::Layout& l, const Tensor& input,
                                const Tensor& gradOutput, bool wantGradInput, bool wantParams, double scale,
                                const char* method, const BatchNormTailGrad& tail) {
  check_cuda(where_of(m, method), gradOutput, "gradOutput");
  m.checkGradOutput(input, gradOutput, method);
  wantParams = wantParams && m.affine;
  if (wantParams) m.checkGradients(method);
  const tensor::MemoryFormat format = activation_format(input);
  const Tensor x = as_format(input, format);
  Tensor dy = as_format(gradOutput, format);
  if (tail.y.defined()) check_like_input(m, method, "the fused output (the fused module's output)", tail.y, x);
  const Tensor y = tail.y.defined() ? as_format(tail.y, format) : Tensor();
  if (wantGradInput) nn::ensure(m.gradInput, x.sizes(), x, format);
  if (tail.dAddend) nn::ensure(*tail.dAddend, x.sizes(), x, format);
  if (x.numel() == 0 || (!wantGradInput && !wantParams && !tail.dAddend)) return;
  const Shape s3{l.N, l.C, l.S};
  BatchNormEpilogueGrad epilogue{.relu = tail.y.defined(), .y = Tensor(), .dz = Tensor(), .beta = beta(m)};
  if (epilogue.relu) epilogue.y = as_cudnn(y, s3, format);
  if (tail.dAddend) epilogue.dz = as_cudnn(*tail.dAddend, s3, format);

  if (!m.isTraining()) {
    if (epilogue.relu || epilogue.dz.defined()) {  // the tail's gradient as its own pass
      Tensor g = epilogue.dz.defined() ? *tail.dAddend : tensor::empty_like(dy);
      if (epilogue.relu) {
        kernels::relu_backward_from_output(y, dy, g);
      } else {
        g.copy_(dy);
      }
      dy = g;
    }
    if (!wantGradInput && !wantParams) return;
    // x, dy and dx share one layout: the kernel takes its strides from the [N x C x S] view
    const Tensor x3 = x.view(s3);
    const kernels::BatchNormSizes sizes{l.N, l.C, l.S, x3.stride(0), x3.stride(1), x3.stride(2)};
    const Tensor dx = wantGradInput ? m.gradInput.view(s3) : Tensor();
    kernels::batch_norm_eval_backward(x3, dy.view(s3), dx, sizes, m.affine ? m.weight : Tensor(), m.running_mean,
                                      m.running_var, m.eps, wantParams ? m.gradWeight : Tensor(),
                                      wantParams ? m.gradBias : Tensor(), scale);
    return;
  }
  const Tensor& saved = m.save_mean;
  if (!saved.defined() || saved.dtype() != m.running_mean.dtype() || saved.device() != x.device() ||
      saved.numel() != l.C || !m.save_invstd.defined() || m.save_invstd.device() != x.device()) {
    throw tensor::Error(where_of(m, method) + "no batch statistics for input " + input.description() +
                        ": call updateOutput first (in training mode)");
  }
  // cuDNN computes dx and both parameter gradients in one call; what the caller did not ask
  // for goes to scratch buffers.
  const Tensor dxOut = wantGradInput ? m.gradInput : nn::ensure(scratchData_, x.sizes(), x, format);
  const Tensor dgamma = wantParams ? m.gradWeight : nn::ensure(scratchWeight_, {l.C}, m.running_mean);
  const Tensor dbeta = wantParams ? m.gradBias : nn::ensure(scratchBias_, {l.C}, m.running_mean);
  plan_->backward(mode(m), as_cudnn(x, s3, format), as_cudnn(dy, s3, format), as_cudnn(dxOut, s3, format), gamma(m),
                  dgamma, dbeta, wantParams ? scale : 1.0, wantParams ? 1.0 : 0.0, m.eps, m.save_mean, m.save_invstd,
                  epilogue);
}

}  // namespace cudnn::detail
