// Linear.cpp: the three passes as GEMMs.
//
// Note [Linear over leading dims]
// As PyTorch's nn.Linear, an input [d1 x .. x dk x inputSize] (k >= 0) is a batch of
// d1 * .. * dk rows: both backends flatten the leading dims into one, as a view where the
// input's strides allow it and a contiguous copy otherwise (Tensor::reshape), run the 2-d
// passes, and hand back output [d1 x .. x dk x outputSize] and gradInput of the input's shape
// (contiguous). gradOutput must have the output's shape. Rows is numel / inputSize, so a zero
// leading dim is an empty batch: an empty output, an empty gradInput, the parameters'
// gradients left as they were.
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
  // See Note [Linear over leading dims].
  return input.reshape({batchRows(input, method), inputSize});
}

int64_t Linear::batchRows(const Tensor& input, const char* method) const {
  checkParameters(method, false);
  if (input.dim() < 1 || input.size(-1) != inputSize) {
    // 1-d and 2-d inputs keep Torch's wording; other ranks name the general contract
    const std::string in = std::to_string(inputSize);
    const std::string contract = input.dim() == 1 || input.dim() == 2 ? "[" + in + "] or [batch x " + in + "]"
                                                                      : "[* x " + in + "] (any leading dims)";
    throw Error(where(method) + "expected input of " + contract + ", got " + tensor::shape_str(input.sizes()));
  }
  return input.numel() / inputSize;
}

Shape Linear::outputShape(const Tensor& input) const {
  Shape s = input.sizes();
  s.back() = outputSize;
  return s;
}

void Linear::checkGradOutputShape(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  const Shape expected = outputShape(input);
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where(method) + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (for input " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("an undefined tensor")));
  }
}

const Tensor& Linear::updateOutputAdding(const Tensor& input, const Tensor& addend) {
  asBatch(input, "forwardAdding");  // the shapes, before the addend's shape is taken from them
  check_addend(where("forwardAdding"), addend, outputShape(input), weight);
  updateOutput(input);
  return output.add_(addend);
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
  if (input.dim() != 2) output = output.view(outputShape(input));
  return output;
}

const Tensor& Linear::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_float(where("updateGradInput"), input);
  check_matches(where("updateGradInput"), input, weight);
  const int64_t rows = batchRows(input, "updateGradInput");  // the input itself is not read
  checkGradOutputShape(input, gradOutput, "updateGradInput");
  check_matches(where("updateGradInput"), gradOutput, weight, "gradOutput");
  const Tensor gy = gradOutput.reshape({rows, outputSize}).contiguous();
  ensure(gradInput, {rows, inputSize}, input);
  tensor::dispatch_f32_f64(input.dtype(), "nn.Linear", [&](auto tag) {
    using T = decltype(tag);
    gemm<T>(false, false, rows, inputSize, outputSize, T(1), gy.data<T>(), outputSize, weight.data<T>(), inputSize,
            T(0), gradInput.data<T>(), inputSize);
  });
  if (input.dim() != 2) gradInput = gradInput.view(input.sizes());
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
