// Identity.cpp
#include "nn/Identity.h"

#include "nn/ModuleConfig.h"

namespace nn {

const Tensor& Identity::updateOutput(const Tensor& input) {
  output = input;
  return output;
}

const Tensor& Identity::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_grad_output_shape(where("updateGradInput"), input.sizes(), gradOutput);
  gradInput = gradOutput;
  return gradInput;
}

ModulePtr Identity::fromConfig(const tensor::Json& config) {
  ConfigReader(config, kTypeName).finish();
  return std::make_shared<Identity>();
}

}  // namespace nn
