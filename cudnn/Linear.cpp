// Linear.cpp: the three passes as cuBLAS GEMMs, row-major as nn's (tensor/Blas.h).
#include "cudnn/Linear.h"

#include "cudnn/core/Descriptors.h"
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

const Tensor& Linear::updateOutput(const Tensor& input) {
  const Tensor x = checked(input, "updateOutput").contiguous();
  const int64_t batch = x.size(0);
  nn::ensure(output, {batch, outputSize}, x);
  gemm_plus_bias(x, weight, bias, output);
  if (input.dim() != 2) output = output.view(outputShape(input));  // Note [Linear over leading dims]
  return output;
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
  const int64_t batch = x.size(0);
  const Tensor gy = checkedGrad(input, gradOutput, "accGradParameters");
  checkParameters("accGradParameters", true);
  gemm(true, false, gy, x, gradWeight, scale, 1.0);
  if (bias.defined()) {
    if (!ones_.defined() || ones_.size(0) != batch || ones_.dtype() != x.dtype() || ones_.device() != x.device()) {
      nn::ensure(ones_, {batch, 1}, x).fill_(1.0);
    }
    gemm(true, false, gy, ones_, gradBias.view({outputSize, 1}), scale, 1.0);
  }
}

}  // namespace cudnn
