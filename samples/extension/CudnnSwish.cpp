// CudnnSwish.cpp: checks (the reference's, then the device), buffers, one kernel launch per pass.
#include "CudnnSwish.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "swish_kernels.h"
#include "tensor/Cuda.h"

namespace ext {

using tensor::DType;
using tensor::Tensor;

nn::ModulePtr CudnnSwish::fromConfig(const tensor::Json& config) {
  nn::ConfigReader c(config, kTypeName);
  const double b = c.number("beta", 1.0);
  c.finish();
  return std::make_shared<CudnnSwish>(b);
}

void CudnnSwish::checkDevice(const char* method, const Tensor& input) const {
  if (!input.is_cuda() || !(input.device() == beta.device()))
    throw tensor::Error(where(method) + "expected input on a CUDA device, where beta is (" + beta.description() +
                        "), got " + input.description());
  nn::check_float(where(method), input);
}

const Tensor& CudnnSwish::updateOutput(const Tensor& input) {
  check("updateOutput", input);
  checkDevice("updateOutput", input);
  const Tensor x = input.contiguous();
  nn::ensure(output, x.sizes(), x);
  kernels::swish_forward(x.raw_data(), beta.raw_data(), output.raw_data(), x.numel(), x.dtype() == DType::Float64,
                         tensor::cuda::stream(x.device().index));
  return output;
}

const Tensor& CudnnSwish::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check("updateGradInput", input, &gradOutput);
  checkDevice("updateGradInput", input);
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  nn::ensure(gradInput, x.sizes(), x);
  kernels::swish_backward(x.raw_data(), gy.raw_data(), beta.raw_data(), gradInput.raw_data(), nullptr, x.numel(),
                          x.dtype() == DType::Float64, tensor::cuda::stream(x.device().index));
  return gradInput;
}

void CudnnSwish::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  check("accGradParameters", input, &gradOutput);
  checkDevice("accGradParameters", input);
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  nn::ensure(contrib_, x.sizes(), x);
  kernels::swish_backward(x.raw_data(), gy.raw_data(), beta.raw_data(), nullptr, contrib_.raw_data(), x.numel(),
                          x.dtype() == DType::Float64, tensor::cuda::stream(x.device().index));
  if (x.numel() > 0) gradBeta.add_(contrib_.sum().reshape({1}), scale);
}

}  // namespace ext
