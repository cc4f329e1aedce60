// Normalize.cpp: nn::Normalize's checks and buffers around cudnn/kernels/Reduce.h.
#include "cudnn/Normalize.h"

#include "cudnn/kernels/Reduce.h"
#include "nn/Buffers.h"

namespace cudnn {

const Tensor& Normalize::updateOutput(const Tensor& input) {
  checkCudaInput("updateOutput", input);
  const auto [rows, d] = checkInput(input, "updateOutput", false);
  const Tensor x = input.contiguous();
  nn::ensure(output, x.sizes(), x);
  kernels::normalize_forward(x, output, rows, d, p, eps);
  return output;
}

const Tensor& Normalize::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  checkCudaGrad("updateGradInput", input, gradOutput);
  const auto [rows, d] = checkInput(input, "updateGradInput", false);
  checkGradOutput(input, gradOutput, "updateGradInput");
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  nn::ensure(gradInput, x.sizes(), x);
  kernels::normalize_backward(x, gy, gradInput, rows, d, p, eps);
  return gradInput;
}

}  // namespace cudnn
