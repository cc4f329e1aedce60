// SpatialAveragePooling.cpp
#include "nn/SpatialAveragePooling.h"

namespace nn {

SpatialAveragePooling::SpatialAveragePooling(int64_t kW, int64_t kH, int64_t dW, int64_t dH, int64_t padW, int64_t padH)
    : SpatialPooling(kW, kH, dW, dH, padW, padH) {
  checkArguments();
}

const Tensor& SpatialAveragePooling::updateOutput(const Tensor& input) {
  averageForward(input, count_include_pad);
  return output;
}

const Tensor& SpatialAveragePooling::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  averageBackward(input, gradOutput, count_include_pad);
  return gradInput;
}

}  // namespace nn
