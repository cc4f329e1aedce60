// Normalize.h: the cuDNN twin of nn::Normalize (x / ||x||_p over the last dimension of [N x D]
// or [D], Torch's norm and gradient). cuDNN has no such op: one block per row on our kernels
// (cudnn/kernels/Reduce.h), nn's formulas in acc_t<T>. Same constructor, fields and printing;
// float32, float64, float16 and bfloat16.
#pragma once

#include "cudnn/Twin.h"
#include "nn/Normalize.h"

namespace cudnn {

class Normalize : public Twin<nn::Normalize> {
 public:
  using Twin::Twin;
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
};

}  // namespace cudnn
