// VolumetricMaxPooling.cpp
#include "nn/VolumetricMaxPooling.h"

namespace nn {

VolumetricMaxPooling::VolumetricMaxPooling(int64_t kT, int64_t kW, int64_t kH, int64_t dT, int64_t dW, int64_t dH,
                                           int64_t padT, int64_t padW, int64_t padH)
    : VolumetricPooling(kT, kW, kH, dT, dW, dH, padT, padW, padH) {
  checkArguments();
}

const Tensor& VolumetricMaxPooling::updateOutput(const Tensor& input) {
  maxForward(input, indices);
  return output;
}

const Tensor& VolumetricMaxPooling::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  maxBackward(input, gradOutput, indices);
  return gradInput;
}

}  // namespace nn
