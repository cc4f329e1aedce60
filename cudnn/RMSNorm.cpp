// RMSNorm.cpp: checks and buffers around kernels::rms_norm_* (or cuDNN's graph under
// rmsnorm.engine=cudnn), as nn::RMSNorm.
#include "cudnn/RMSNorm.h"

#include <cstdio>

#include "cudnn/Config.h"
#include "cudnn/core/Descriptors.h"
#include "cudnn/kernels/RMSNorm.h"
#include "cudnn/ops/rms_norm.h"
#include "nn/Buffers.h"

namespace cudnn {

namespace {
// The statistics' dtype next to x: float32 for 16-bit x (nn/RMSNorm.h).
tensor::DType stats_dtype(const tensor::Tensor& x) {
  const bool half = x.dtype() == tensor::DType::Float16 || x.dtype() == tensor::DType::BFloat16;
  return half ? tensor::DType::Float32 : x.dtype();
}

// Records the path a pass took, and under verbose says why cuDNN's engine was not taken (once
// per change of path, not on every step).
void record(bool backward, const std::string& path) {
  if (cudnn::config().verbose && path.rfind("kernel: ", 0) == 0 && path != rms_norm_last_path(backward)) {
    std::fprintf(stderr, "cudnn-nn: RMS norm %s on our kernel (%s)\n", backward ? "backward" : "forward",
                 path.c_str() + 8);
  }
  set_rms_norm_last_path(backward, path);
}
}  // namespace

std::pair<int64_t, int64_t> RMSNorm::checked(const tensor::Tensor& input, const tensor::Tensor* gradOutput,
                                             const char* method) const {
  const std::string w = where(method);
  check_on_device(w, input, weight);
  check_cuda(w, input, "input");
  if (weight.defined()) nn::check_matches(w, input, weight);
  const auto rc = rowsCols(input, method);
  if (gradOutput) {
    check_cuda(w, *gradOutput, "gradOutput");
    checkGradOutput(input, *gradOutput, method);
  }
  return rc;
}

tensor::Tensor RMSNorm::float32Weight(int64_t cols) {
  if (weight.dtype() == tensor::DType::Float32) return weight.view({cols});
  nn::ensure(weight32_, {cols}, tensor::DType::Float32, weight.device());
  weight32_.copy_(weight.view({cols}));  // the weight may have changed since
  return weight32_;
}

const tensor::Tensor& RMSNorm::updateOutput(const tensor::Tensor& input) {
  const auto [rows, cols] = checked(input, nullptr, "updateOutput");
  const tensor::Tensor x = input.contiguous();
  nn::ensure(output, x.sizes(), x);
  nn::ensure(saveRstd, {rows}, stats_dtype(x), x.device());
  const double e = epsFor(x.dtype());
  std::string path = "kernel";
  if (rms_norm_engine() == RMSNormEngine::Cudnn) {
    // Note [Decoding's norms]: a decode step's norms are one row per sequence, in evaluation mode;
    // there cuDNN's graph (and the float32 copy of the weight it takes) costs about 12 us a call
    // against our kernel's few, so a 16-bit forward outside training runs the kernel. In training
    // the forward stays paired with cuDNN's backward (which reads either engine's saveRstd).
    std::string why = !training_ && stats_dtype(x) != x.dtype() ? "evaluation mode in 16 bits (Note [Decoding's norms])"
                                                                : rms_norm_graph_refusal(x, weight.defined());
    if (why.empty()) {
      if (rms_norm_forward_graph(x, rows, cols, float32Weight(cols), e, output, saveRstd, why)) {
        record(false, why);
        return output;
      }
    }
    path = "kernel: " + why;
  }
  kernels::rms_norm_forward(x, rows, cols, weight, e, output, saveRstd);
  record(false, path);
  return output;
}

void RMSNorm::backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) {
  const bool cudnn = rms_norm_engine() == RMSNormEngine::Cudnn;
  const std::string refused = cudnn ? rms_norm_graph_refusal(input, weight.defined()) : "";
  if (cudnn && refused.empty()) {
    // named as the two passes the kernel engine and nn run (their errors read the same)
    const auto [rows, cols] = checked(input, &gradOutput, "updateGradInput");
    checkParameters("accGradParameters", true);
    const tensor::Tensor x = input.contiguous(), gy = gradOutput.contiguous();
    nn::ensure(gradInput, x.sizes(), x);
    // cuDNN writes the weight's gradient, in float32; the module accumulates it, scaled
    nn::ensure(gradScratch_, {cols}, tensor::DType::Float32, x.device());
    std::string why;
    if (rms_norm_backward_graph(x, gy, rows, cols, float32Weight(cols), saveRstd, gradInput, gradScratch_, why)) {
      const tensor::DType dt = gradWeight.dtype();
      gradWeight.view({cols}).add_(dt == tensor::DType::Float32 ? gradScratch_ : gradScratch_.to(dt), scale);
      record(true, why);
      return;
    }
    record(true, "kernel: " + why);
  } else {
    record(true, cudnn ? "kernel: " + refused : "kernel");
  }
  Module::backwardImpl(input, gradOutput, scale);
}

const tensor::Tensor& RMSNorm::updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) {
  const auto [rows, cols] = checked(input, &gradOutput, "updateGradInput");
  const tensor::Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  nn::ensure(gradInput, x.sizes(), x);
  kernels::rms_norm_backward_input(x, gy, rows, cols, weight, saveRstd, gradInput);
  return gradInput;
}

void RMSNorm::accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) {
  if (!weight.defined()) return;
  const auto [rows, cols] = checked(input, &gradOutput, "accGradParameters");
  checkParameters("accGradParameters", true);
  const tensor::Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  kernels::rms_norm_backward_params(x, gy, rows, cols, saveRstd, gradWeight, scale);
}

}  // namespace cudnn
