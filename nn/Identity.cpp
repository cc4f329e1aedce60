// Identity.cpp
#include "nn/Identity.h"

#include "nn/ModuleConfig.h"

namespace nn {

const Tensor& Identity::updateOutput(const Tensor& input) {
  output = input;
  return output;
}

const Tensor& Identity::updateGradInput(const Tensor&, const Tensor& gradOutput) {
  gradInput = gradOutput;
  return gradInput;
}

ModulePtr Identity::fromConfig(const tensor::Json& config) {
  ConfigReader(config, "nn.Identity").finish();
  return std::make_shared<Identity>();
}

}  // namespace nn
