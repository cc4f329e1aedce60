// LayerNorm.cpp: checks and buffers around kernels::layer_norm_*, as nn::LayerNorm.
#include "cudnn/LayerNorm.h"

#include "cudnn/Config.h"
#include "cudnn/core/Descriptors.h"
#include "cudnn/kernels/LayerNorm.h"
#include "cudnn/ops/layer_norm.h"
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
  std::string path = "ours";
  if (cudnn::config().layernorm_engine == LayerNormEngine::Cudnn) {
    std::string why = layer_norm_graph_refusal(x, weight.defined());
    if (why.empty()) {
      const auto [w32, b32] = float32Parameters(cols);
      if (layer_norm_forward_graph(x, rows, cols, w32, b32, eps, output, saveMean, saveRstd, why)) {
        set_layer_norm_last_path(false, why);
        return output;
      }
    }
    path = "ours: " + why;
  }
  kernels::layer_norm_forward(x, rows, cols, weight, bias, eps, output, saveMean, saveRstd);
  set_layer_norm_last_path(false, path);
  return output;
}

std::pair<tensor::Tensor, tensor::Tensor> LayerNorm::float32Parameters(int64_t cols) {
  if (weight.dtype() == tensor::DType::Float32) return {weight.view({cols}), bias.view({cols})};
  if (!params32_.defined() || params32_.size(1) != cols || params32_.device() != weight.device()) {
    params32_ = tensor::empty({2, cols}, tensor::DType::Float32, weight.device());
  }
  params32_.select(0, 0).copy_(weight.view({cols}));  // the parameters may have changed since
  params32_.select(0, 1).copy_(bias.view({cols}));
  return {params32_.select(0, 0), params32_.select(0, 1)};
}

void LayerNorm::backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) {
  const bool cudnn = cudnn::config().layernorm_engine == LayerNormEngine::Cudnn;
  const std::string refused = cudnn ? layer_norm_graph_refusal(input, weight.defined()) : "";
  if (cudnn && refused.empty()) {
    const auto [rows, cols] = checked(input, &gradOutput, "backward");
    checkParameters("backward", true);
    if (!saveMean.defined() || saveMean.numel() != rows || saveRstd.numel() != rows) {
      Module::backwardImpl(input, gradOutput, scale);  // our pass says what is missing
      return;
    }
    const tensor::Tensor x = input.contiguous(), gy = gradOutput.contiguous();
    nn::ensure(gradInput, x.sizes(), x);
    // cuDNN writes the parameters' gradients, in float32; the module accumulates them, scaled
    if (!gradScratch_.defined() || gradScratch_.size(1) != cols || gradScratch_.device() != x.device()) {
      gradScratch_ = tensor::empty({2, cols}, tensor::DType::Float32, x.device());
    }
    const tensor::Tensor dw = gradScratch_.select(0, 0), db = gradScratch_.select(0, 1);
    const tensor::Tensor w32 = float32Parameters(cols).first;
    std::string why;
    if (layer_norm_backward_graph(x, gy, rows, cols, w32, saveMean, saveRstd, gradInput, dw, db, why)) {
      const tensor::DType dt = gradWeight.dtype();
      gradWeight.view({cols}).add_(dt == tensor::DType::Float32 ? dw : dw.to(dt), scale);
      gradBias.view({cols}).add_(dt == tensor::DType::Float32 ? db : db.to(dt), scale);
      set_layer_norm_last_path(true, why);
      return;
    }
    set_layer_norm_last_path(true, "ours: " + why);
  } else {
    set_layer_norm_last_path(true, cudnn ? "ours: " + refused : "ours");
  }
  Module::backwardImpl(input, gradOutput, scale);
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
