// PReLU.cpp: nn::PReLU's checks and buffers around cudnn/kernels/Activation.h's prelu_*.
#include "cudnn/PReLU.h"

#include "cudnn/kernels/Activation.h"
#include "nn/Buffers.h"

namespace cudnn {

const Tensor& PReLU::updateOutput(const Tensor& input) {
  const std::string where = checkCudaInput("updateOutput", input, weight);
  const Layout l = checkInput(input, "updateOutput", false, false);
  nn::check_matches(where, input, weight);
  const Tensor x = input.contiguous();
  nn::ensure(output, x.sizes(), x);
  kernels::prelu_forward(x, weight, output, l.channels, l.inner);
  return output;
}

const Tensor& PReLU::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const std::string where = checkCudaGrad("updateGradInput", input, gradOutput);
  const Layout l = checkInput(input, "updateGradInput", false, false);
  nn::check_matches(where, input, weight);
  checkGradOutput(input, gradOutput, "updateGradInput");
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  nn::ensure(gradInput, x.sizes(), x);
  kernels::prelu_backward(x, weight, gy, gradInput, l.channels, l.inner);
  return gradInput;
}

void PReLU::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const std::string where = checkCudaGrad("accGradParameters", input, gradOutput);
  const Layout l = checkInput(input, "accGradParameters", true, false);
  nn::check_matches(where, input, weight);
  checkGradOutput(input, gradOutput, "accGradParameters");
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  kernels::prelu_acc_grad_weight(x, gy, gradWeight, scale, l.outer, l.channels, l.inner);
}

}  // namespace cudnn
