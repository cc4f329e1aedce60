// RMSNorm.h: the cuDNN twin of nn::RMSNorm, on our kernels (cudnn/kernels/RMSNorm.h): one block
// per row for the statistics and the normalisation, fixed-order sums for the weight's gradient
// (the same bits from run to run). Same constructor, parameters and printing; float32, float64,
// float16 and bfloat16 input of the weight's dtype on CUDA devices (to() converts the weight, as
// PyTorch's .half()), the 16-bit ones computed in float32 and rounded once (Note [RMSNorm's
// rounding] in nn/RMSNorm.cpp). saveRstd is filled as nn's, in float32 for 16-bit input (float64
// for float64). A non-contiguous input is read through a contiguous copy; output and gradInput
// are contiguous. With the flag rmsnorm.engine=cudnn the forward and backward() run cuDNN's
// graph-API RMS norm instead where cuDNN takes the problem (cudnn/ops/rms_norm.h), our kernels
// elsewhere, saying why under verbose.
#pragma once

#include "cudnn/Twin.h"
#include "nn/RMSNorm.h"

namespace cudnn {

class RMSNorm : public Twin<nn::RMSNorm> {
 public:
  using Twin::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
  void accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale = 1.0) override;

 protected:
  // backward() in one cuDNN graph (the input's and the weight's gradients) under
  // rmsnorm.engine=cudnn; our kernels' two passes otherwise.
  void backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) override;

 private:
  // {rows, cols} of a checked input: on a CUDA device, a floating dtype, the weight's dtype and
  // device, ending with normalizedShape; with gradOutput's checks when it is given.
  std::pair<int64_t, int64_t> checked(const tensor::Tensor& input, const tensor::Tensor* gradOutput,
                                      const char* method) const;
  // the weight as cuDNN's engines take it: float32 [cols] (a copy of a 16-bit weight)
  tensor::Tensor float32Weight(int64_t cols);
  tensor::Tensor weight32_;     // [cols] float32 copy of a 16-bit weight
  tensor::Tensor gradScratch_;  // [cols] float32: cuDNN's weight gradient, before accumulation
};

}  // namespace cudnn
