// Identity.cpp
#include "nn/Identity.h"

#include "nn/ModuleConfig.h"

namespace nn {

const Tensor& Identity::updateOutput(const Tensor& input) {
  output = input;
  return output;
}

const Tensor& Identity::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  if (!gradOutput.defined() || gradOutput.sizes() != input.sizes()) {
    throw Error(where("updateGradInput") + "expected gradOutput of the output's shape " +
                tensor::shape_str(input.sizes()) + ", got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("an undefined tensor")));
  }
  gradInput = gradOutput;
  return gradInput;
}

ModulePtr Identity::fromConfig(const tensor::Json& config) {
  ConfigReader(config, kTypeName).finish();
  return std::make_shared<Identity>();
}

}  // namespace nn
