// BatchNormalization.cpp: buffers and the training/evaluation split around BatchNormPlan,
// shared by the three batch-normalisation twins.
#include "cudnn/BatchNormalization.h"

#include <sstream>

#include "cudnn/kernels/BatchNorm.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
std::string where_of(const nn::Module& m, const char* method) { return m.type_name() + "::" + method + ": "; }

// A constant [C] tensor of the statistics' dtype and device (affine = false).
const Tensor& constant(Tensor& buf, const nn::BatchNormalization& m, double value) {
  const Tensor& like = m.running_mean;
  if (!buf.defined() || buf.dtype() != like.dtype() || buf.device() != like.device() || buf.numel() != m.nOutput) {
    buf = tensor::full({m.nOutput}, value, like.dtype(), like.device());
  }
  return buf;
}
}  // namespace

BatchNormMode BatchNormCompute::mode(const nn::BatchNormalization& m) const {
  return m.nDim == 2 ? BatchNormMode::PerActivation : BatchNormMode::Spatial;
}

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

void BatchNormCompute::forward(nn::BatchNormalization& m, const nn::BatchNormalization::Layout& l,
                               const Tensor& input) {
  const Tensor x = input.contiguous();
  nn::ensure(m.output, x.sizes(), x);
  if (x.numel() == 0) return;
  const Shape s3{l.N, l.C, l.S};
  if (m.isTraining()) {
    nn::ensure(m.save_mean, {l.C}, m.running_mean);
    nn::ensure(m.save_invstd, {l.C}, m.running_mean);
    plan_.forward_train(mode(m), x.view(s3), m.output.view(s3), gamma(m), beta(m), m.momentum, m.running_mean,
                        m.running_var, m.eps, m.save_mean, m.save_invstd);
  } else {
    plan_.forward_inference(mode(m), x.view(s3), m.output.view(s3), gamma(m), beta(m), m.running_mean, m.running_var,
                            m.eps);
  }
}

void BatchNormCompute::backward(nn::BatchNormalization& m, const nn::BatchNormalization::Layout& l, const Tensor& input,
                                const Tensor& gradOutput, bool wantGradInput, bool wantParams, double scale,
                                const char* method) {
  check_cuda(where_of(m, method), gradOutput, "gradOutput");
  m.checkGradOutput(input, gradOutput, method);
  wantParams = wantParams && m.affine;
  const Tensor x = input.contiguous();
  const Tensor dy = gradOutput.contiguous();
  if (wantGradInput) nn::ensure(m.gradInput, x.sizes(), x);
  if (x.numel() == 0 || (!wantGradInput && !wantParams)) return;
  const Shape s3{l.N, l.C, l.S};
  const Tensor dx = wantGradInput ? m.gradInput.view(s3) : Tensor();

  if (!m.isTraining()) {
    kernels::batch_norm_eval_backward(x.view(s3), dy.view(s3), dx, {l.N, l.C, l.S}, m.affine ? m.weight : Tensor(),
                                      m.running_mean, m.running_var, m.eps, wantParams ? m.gradWeight : Tensor(),
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
  const Tensor dxOut = wantGradInput ? dx : nn::ensure(scratchData_, s3, x);
  const Tensor dgamma = wantParams ? m.gradWeight : nn::ensure(scratchWeight_, {l.C}, m.running_mean);
  const Tensor dbeta = wantParams ? m.gradBias : nn::ensure(scratchBias_, {l.C}, m.running_mean);
  plan_.backward(mode(m), x.view(s3), dy.view(s3), dxOut, gamma(m), dgamma, dbeta, wantParams ? scale : 1.0,
                 wantParams ? 1.0 : 0.0, m.eps, m.save_mean, m.save_invstd);
}

}  // namespace cudnn::detail
