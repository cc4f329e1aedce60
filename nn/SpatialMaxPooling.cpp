// SpatialMaxPooling.cpp
#include "nn/SpatialMaxPooling.h"

namespace nn {

SpatialMaxPooling::SpatialMaxPooling(int64_t kW, int64_t kH, int64_t dW, int64_t dH, int64_t padW, int64_t padH)
    : SpatialPooling(kW, kH, dW, dH, padW, padH) {
  checkArguments();
}

const Tensor& SpatialMaxPooling::updateOutput(const Tensor& input) {
  maxForward(input, indices);
  return output;
}

const Tensor& SpatialMaxPooling::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  maxBackward(input, gradOutput, indices);
  return gradInput;
}

}  // namespace nn
