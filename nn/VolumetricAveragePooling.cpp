// VolumetricAveragePooling.cpp
#include "nn/VolumetricAveragePooling.h"

namespace nn {

VolumetricAveragePooling::VolumetricAveragePooling(int64_t kT, int64_t kW, int64_t kH, int64_t dT, int64_t dW,
                                                   int64_t dH, int64_t padT, int64_t padW, int64_t padH)
    : VolumetricPooling(kT, kW, kH, dT, dW, dH, padT, padW, padH) {
  checkArguments();
}

const Tensor& VolumetricAveragePooling::updateOutput(const Tensor& input) {
  averageForward(input, count_include_pad);
  return output;
}

const Tensor& VolumetricAveragePooling::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  averageBackward(input, gradOutput, count_include_pad);
  return gradInput;
}

}  // namespace nn
