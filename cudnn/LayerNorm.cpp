// LayerNorm.cpp: checks and buffers around kernels::layer_norm_*, as nn::LayerNorm.
#include "cudnn/LayerNorm.h"

#include "cudnn/core/Descriptors.h"
#include "cudnn/kernels/LayerNorm.h"
#include "nn/Buffers.h"

namespace cudnn {

namespace {
// nn::ensure for a statistics buffer [rows] next to x: float32 for 16-bit x (nn/LayerNorm.h).
void ensure_stats(tensor::Tensor& buf, int64_t rows, const tensor::Tensor& x) {
  const bool half = x.dtype() == tensor::DType::Float16 || x.dtype() == tensor::DType::BFloat16;
  const tensor::DType dt = half ? tensor::DType::Float32 : x.dtype();
  if (!buf.defined() || buf.dtype() != dt || buf.device() != x.device()) {
    buf = tensor::empty({rows}, dt, x.device());
  } else if (buf.sizes() != tensor::Shape{rows}) {
    buf.resize_({rows});
  }
}
}  // namespace

std::pair<int64_t, int64_t> LayerNorm::checked(const tensor::Tensor& input, const tensor::Tensor* gradOutput,
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

const tensor::Tensor& LayerNorm::updateOutput(const tensor::Tensor& input) {
  const auto [rows, cols] = checked(input, nullptr, "updateOutput");
  const tensor::Tensor x = input.contiguous();
  nn::ensure(output, x.sizes(), x);
  ensure_stats(saveMean, rows, x);
  ensure_stats(saveRstd, rows, x);
  kernels::layer_norm_forward(x, rows, cols, weight, bias, eps, output, saveMean, saveRstd);
  return output;
}

const tensor::Tensor& LayerNorm::updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) {
  const auto [rows, cols] = checked(input, &gradOutput, "updateGradInput");
  const tensor::Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  nn::ensure(gradInput, x.sizes(), x);
  kernels::layer_norm_backward_input(x, gy, rows, cols, weight, saveMean, saveRstd, gradInput);
  return gradInput;
}

void LayerNorm::accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) {
  if (!weight.defined()) return;
  const auto [rows, cols] = checked(input, &gradOutput, "accGradParameters");
  checkParameters("accGradParameters", true);
  const tensor::Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  kernels::layer_norm_backward_params(x, gy, rows, cols, saveMean, saveRstd, gradWeight, gradBias, scale);
}

}  // namespace cudnn
