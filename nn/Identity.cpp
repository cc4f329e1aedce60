// Identity.cpp
#include "nn/Identity.h"

#include "nn/ModuleConfig.h"
#include "nn/TableModule.h"

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

const Value& Identity::updateOutputValue(const Value& input) {
  if (input.empty()) throw Error(where("updateOutput") + "expected a tensor or a table, got nothing");
  outputValue = input;
  output = input.tensorOrUndefined();
  return outputValue;
}

const Value& Identity::updateGradInputValue(const Value& input, const Value& gradOutput) {
  check_grad_structure(where("updateGradInput"), input, gradOutput);
  gradInputValue = gradOutput;
  gradInput = gradOutput.tensorOrUndefined();
  return gradInputValue;
}

ModulePtr Identity::fromConfig(const tensor::Json& config) {
  ConfigReader(config, kTypeName).finish();
  return std::make_shared<Identity>();
}

}  // namespace nn
