// PReLU.h: the cuDNN twin of nn::PReLU (y = x > 0 ? x : w x, one weight shared or one per
// channel). cuDNN has no learnable-slope activation: our kernels (cudnn/kernels/Activation.h),
// the weight gradient one block per channel folded in a fixed order. Same constructor,
// weight, printing and checks as nn's; float32, float64, float16 and bfloat16.
#pragma once

#include "cudnn/Twin.h"
#include "nn/PReLU.h"

namespace cudnn {

class PReLU : public Twin<nn::PReLU> {
 public:
  using Twin::Twin;
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
};

}  // namespace cudnn
