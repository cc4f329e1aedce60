// ReshapeBase.cpp
#include "nn/ReshapeBase.h"

namespace nn {

const Tensor& ReshapeBase::updateOutput(const Tensor& input) {
  output = input.reshape(outputShape(input));
  return output;
}

const Tensor& ReshapeBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  // the output's shape, not just its element count: another arrangement pairs wrong elements
  const Shape expected = outputShape(input);
  if (gradOutput.sizes() != expected) {
    throw Error(where("updateGradInput") + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (input " + tensor::shape_str(input.sizes()) + "), got " + tensor::shape_str(gradOutput.sizes()));
  }
  gradInput = gradOutput.reshape(input.sizes());
  return gradInput;
}

}  // namespace nn
