// LayerNorm.h: the cuDNN twin of nn::LayerNorm, on our kernels (cudnn/kernels/LayerNorm.h): one
// block per row for the statistics and the normalisation, fixed-order sums for the parameter
// gradients (the same bits from run to run). Same constructor, parameters and printing;
// float32, float64, float16 and bfloat16 input of the parameters' dtype on CUDA devices (to()
// converts the parameters, as PyTorch's .half()). saveMean and saveRstd are filled as nn's, in
// float32 for 16-bit input (float64 for float64). A non-contiguous input is read through a
// contiguous copy; output and gradInput are contiguous. With the flag layernorm.engine=cudnn
// the forward and backward() run cuDNN's graph-API layer norm instead where cuDNN takes the
// problem (cudnn/ops/layer_norm.h); issue 25 makes the default whichever measures faster.
#pragma once

#include "cudnn/Twin.h"
#include "nn/LayerNorm.h"

namespace cudnn {

class LayerNorm : public Twin<nn::LayerNorm> {
 public:
  using Twin::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
  void accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale = 1.0) override;

 protected:
  // backward() in one cuDNN graph (the input's and the parameters' gradients) under
  // layernorm.engine=cudnn; our kernels' two passes otherwise.
  void backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) override;

 private:
  // {rows, cols} of a checked input: on a CUDA device, a floating dtype, the parameters' dtype
  // and device, ending with normalizedShape; with gradOutput's checks when it is given.
  std::pair<int64_t, int64_t> checked(const tensor::Tensor& input, const tensor::Tensor* gradOutput,
                                      const char* method) const;
  // weight and bias as cuDNN's engines take them: float32 [cols] (copies for 16-bit parameters)
  std::pair<tensor::Tensor, tensor::Tensor> float32Parameters(int64_t cols);
  tensor::Tensor params32_;     // [2 x cols] float32 copies of 16-bit weight and bias
  tensor::Tensor gradScratch_;  // [2 x cols] float32: cuDNN's weight and bias gradients, before accumulation
};

}  // namespace cudnn
