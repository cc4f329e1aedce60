// Linear.cpp: the three passes as cuBLAS GEMMs, row-major as nn's (tensor/Blas.h).
#include "cudnn/Linear.h"

#include "cudnn/GELU.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Descriptors.h"
#include "cudnn/kernels/FewRowsLinear.h"
#include "cudnn/ops/blas.h"
#include "nn/Buffers.h"

namespace cudnn {

Tensor Linear::checked(const Tensor& input, const char* method) const {
  const std::string w = where(method);
  check_on_device(w, input, weight);
  check_cuda(w, input, "input");
  nn::check_matches(w, input, weight);
  return asBatch(input, method);
}

Tensor Linear::checkedGrad(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  const std::string w = where(method);
  checkGradOutputShape(input, gradOutput, method);
  check_cuda(w, gradOutput, "gradOutput");
  nn::check_matches(w, gradOutput, weight, "gradOutput");
  return gradOutput.reshape({input.numel() / inputSize, outputSize}).contiguous();
}

const Tensor& Linear::forwardInto(const Tensor& input, const Tensor& addend, const char* method) {
  const Tensor x = checked(input, method).contiguous();
  const int64_t batch = x.size(0);
  nn::ensure(output, {batch, outputSize}, x);
  gemm_plus_bias(x, weight, bias, output, addend.defined() ? addend.view({batch, outputSize}) : Tensor());
  if (input.dim() != 2) output = output.view(outputShape(input));  // Note [Linear over leading dims]
  return output;
}

const Tensor& Linear::updateOutput(const Tensor& input) { return forwardInto(input, Tensor(), "updateOutput"); }

bool Linear::forwardThrough(const Tensor& input, nn::Module& next) {
  auto* gelu = dynamic_cast<cudnn::GELU*>(&next);
  // what the kernel and both forwards would accept, checked without throwing: anything else goes
  // through the two forwards, which name what is wrong
  if (!gelu || cudnn::config().linear_engine != LinearEngine::Auto || !input.defined() || !input.is_cuda() ||
      input.dim() < 2 || input.size(-1) != inputSize || input.numel() > kernels::kFewRowsMax * inputSize ||
      input.numel() == 0 || input.dtype() != weight.dtype() || input.device() != weight.device() ||
      !input.is_contiguous() || weight.dim() != 2 || weight.size(0) != outputSize || weight.size(1) != inputSize ||
      (bias.defined() && (bias.dim() != 1 || bias.numel() != outputSize))) {
    return false;
  }
  const int64_t rows = input.numel() / inputSize;
  const Tensor x = input.view({rows, inputSize});  // Note [Linear over leading dims]
  nn::ensure(output, {rows, outputSize}, x);
  nn::ensure(gelu->output, {rows, outputSize}, x);
  if (!kernels::few_rows_linear_activated(x, weight, bias, output, gelu->activation(), gelu->output)) return false;
  output = output.view(outputShape(input));
  gelu->output = gelu->output.view(outputShape(input));
  return true;
}

const Tensor& Linear::updateOutputAdding(const Tensor& input, const Tensor& addend) {
  asBatch(input, "forwardAdding");  // the shapes, before the addend's shape is taken from them
  nn::check_addend(where("forwardAdding"), addend, outputShape(input), weight);
  return forwardInto(input, addend, "forwardAdding");
}

const Tensor& Linear::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const std::string w = where("updateGradInput");
  check_on_device(w, input, weight);
  check_cuda(w, input, "input");
  nn::check_matches(w, input, weight);
  const int64_t rows = batchRows(input, "updateGradInput");  // the input itself is not read
  const Tensor gy = checkedGrad(input, gradOutput, "updateGradInput");
  nn::ensure(gradInput, {rows, inputSize}, input);
  gemm(false, false, gy, weight, gradInput);
  if (input.dim() != 2) gradInput = gradInput.view(input.sizes());
  return gradInput;
}

void Linear::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const Tensor x = checked(input, "accGradParameters").contiguous();
  const Tensor gy = checkedGrad(input, gradOutput, "accGradParameters");
  checkParameters("accGradParameters", true);
  linear_grad_parameters(x, gy, gradWeight, bias.defined() ? gradBias : Tensor(), scale, ones_);
}

}  // namespace cudnn
