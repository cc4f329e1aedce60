// Linear.cpp: the three passes as GEMMs.
#include "nn/Linear.h"

#include <cmath>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Linear.h"
#include "tensor/Blas.h"

namespace nn {

using tensor::blas::gemm;

Linear::Linear(int64_t inputSize_, int64_t outputSize_, bool withBias)
    : inputSize(inputSize_), outputSize(outputSize_) {
  if (inputSize <= 0 || outputSize <= 0) {
    throw Error(std::string(kTypeName) + ": expected positive sizes, got " + std::to_string(inputSize) + " -> " +
                std::to_string(outputSize));
  }
  weight = tensor::empty({outputSize, inputSize});
  gradWeight = tensor::zeros({outputSize, inputSize});
  if (withBias) {
    bias = tensor::empty({outputSize});
    gradBias = tensor::zeros({outputSize});
  }
  reset();
}

void Linear::reset(double stdv) {
  if (stdv < 0) stdv = 1.0 / std::sqrt(static_cast<double>(inputSize));
  weight.uniform_(-stdv, stdv);
  if (bias.defined()) bias.uniform_(-stdv, stdv);
}

void Linear::visitState(StateVisitor& v) {
  v.parameter("weight", weight, gradWeight);
  if (bias.defined()) v.parameter("bias", bias, gradBias);
}

Tensor Linear::batched(const Tensor& input, const char* method) const {
  check_float(where(method), input);
  check_matches(where(method), input, weight);
  return asBatch(input, method);
}

void Linear::checkParameters(const char* method, bool gradients) const {
  check_parameter(*this, method, "weight", weight, {outputSize, inputSize}, gradients ? &gradWeight : nullptr);
  if (bias.defined()) check_parameter(*this, method, "bias", bias, {outputSize}, gradients ? &gradBias : nullptr);
}

Tensor Linear::asBatch(const Tensor& input, const char* method) const {
  checkParameters(method, false);
  const bool ok = (input.dim() == 1 || input.dim() == 2) && input.size(-1) == inputSize;
  if (!ok) {
    throw Error(where(method) + "expected input of [" + std::to_string(inputSize) + "] or [batch x " +
                std::to_string(inputSize) + "], got " + tensor::shape_str(input.sizes()));
  }
  return input.dim() == 1 ? input.view({1, inputSize}) : input;
}

void Linear::checkGradOutputShape(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  const Shape expected = input.dim() == 1 ? Shape{outputSize} : Shape{input.size(0), outputSize};
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where(method) + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (for input " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("an undefined tensor")));
  }
}

const Tensor& Linear::updateOutput(const Tensor& input) {
  const Tensor x = batched(input, "updateOutput").contiguous();
  const int64_t batch = x.size(0);
  ensure(output, {batch, outputSize}, x);
  tensor::dispatch_f32_f64(x.dtype(), "nn.Linear", [&](auto tag) {
    using T = decltype(tag);
    kernels::linear_forward<T>(x.data<T>(), weight.data<T>(), bias.defined() ? bias.data<T>() : nullptr,
                               output.data<T>(), batch, inputSize, outputSize);
  });
  if (input.dim() == 1) output = output.view({outputSize});
  return output;
}

const Tensor& Linear::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Tensor x = batched(input, "updateGradInput");
  checkGradOutputShape(input, gradOutput, "updateGradInput");
  check_matches(where("updateGradInput"), gradOutput, weight, "gradOutput");
  const Tensor gy = gradOutput.reshape({x.size(0), outputSize}).contiguous();
  ensure(gradInput, x.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), "nn.Linear", [&](auto tag) {
    using T = decltype(tag);
    gemm<T>(false, false, x.size(0), inputSize, outputSize, T(1), gy.data<T>(), outputSize, weight.data<T>(), inputSize,
            T(0), gradInput.data<T>(), inputSize);
  });
  if (input.dim() == 1) gradInput = gradInput.view({inputSize});
  return gradInput;
}

void Linear::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const Tensor x = batched(input, "accGradParameters").contiguous();
  const int64_t batch = x.size(0);
  checkGradOutputShape(input, gradOutput, "accGradParameters");
  check_matches(where("accGradParameters"), gradOutput, weight, "gradOutput");
  checkParameters("accGradParameters", true);
  const Tensor gy = gradOutput.reshape({batch, outputSize}).contiguous();
  tensor::dispatch_f32_f64(x.dtype(), "nn.Linear", [&](auto tag) {
    using T = decltype(tag);
    gemm<T>(true, false, outputSize, inputSize, batch, static_cast<T>(scale), gy.data<T>(), outputSize, x.data<T>(),
            inputSize, T(1), gradWeight.data<T>(), inputSize);
    if (bias.defined()) {
      T* gb = gradBias.data<T>();
      const T* g = gy.data<T>();
      for (int64_t i = 0; i < batch; ++i)
        for (int64_t j = 0; j < outputSize; ++j) gb[j] += static_cast<T>(scale) * g[i * outputSize + j];
    }
  });
}

std::string Linear::str() const {
  return type_name() + "(" + std::to_string(inputSize) + " -> " + std::to_string(outputSize) + ")" +
         (bias.defined() ? "" : " without bias");
}

tensor::Json Linear::config() const {
  return tensor::Json::Object{{"inputSize", inputSize}, {"outputSize", outputSize}, {"bias", bias.defined()}};
}

ModulePtr Linear::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t inputSize = c.integer("inputSize"), outputSize = c.integer("outputSize");
  const bool bias = c.flag("bias", true);
  c.finish();
  return std::make_shared<Linear>(inputSize, outputSize, bias);
}

}  // namespace nn
