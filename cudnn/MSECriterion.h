// MSECriterion.h: cudnn.MSECriterion, nn::MSECriterion on CUDA tensors with tensor operations
// on the device: the loss sum (input - target)^2 is reduced in float64 (so float16 sums cannot
// overflow, and float32 ones match nn's float64 accumulation) and read once, as the double
// forward returns; gradInput = 2 (input - target) / n stays in the input's dtype.
#pragma once

#include "cudnn/Twin.h"
#include "nn/MSECriterion.h"

namespace cudnn {

class MSECriterion : public Twin<nn::MSECriterion> {
 public:
  using Twin::Twin;

  double updateOutput(const tensor::Tensor& input, const tensor::Tensor& target) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& target) override;

 private:
  // Checks devices, dtypes and sizes; returns the target viewed (or copied) as the input's shape.
  tensor::Tensor checked(const tensor::Tensor& input, const tensor::Tensor& target, const char* method) const;
};

}  // namespace cudnn
