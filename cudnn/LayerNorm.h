// LayerNorm.h: the cuDNN twin of nn::LayerNorm, on our kernels (cudnn/kernels/LayerNorm.h): one
// block per row for the statistics and the normalisation, fixed-order sums for the parameter
// gradients (the same bits from run to run). Same constructor, parameters and printing;
// float32, float64, float16 and bfloat16 input of the parameters' dtype on CUDA devices (to()
// converts the parameters, as PyTorch's .half()). saveMean and saveRstd are filled as nn's, in
// float32 for 16-bit input (float64 for float64). A non-contiguous input is read through a
// contiguous copy; output and gradInput are contiguous. cuDNN's graph-API layer norm is not
// used yet: issue 25 takes whichever a measurement finds faster, and ours came first.
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

 private:
  // {rows, cols} of a checked input: on a CUDA device, a floating dtype, the parameters' dtype
  // and device, ending with normalizedShape; with gradOutput's checks when it is given.
  std::pair<int64_t, int64_t> checked(const tensor::Tensor& input, const tensor::Tensor* gradOutput,
                                      const char* method) const;
};

}  // namespace cudnn
