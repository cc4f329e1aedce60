// Embedding.h: the cuDNN twin of nn::Embedding on our kernels (cudnn/kernels/Embedding.h): a
// gather forward, a deterministic backward (Note [Deterministic embedding gradients]: the same
// bits from run to run, nn's bits in float32 and float64). Same constructor, parameters and
// printing; int64 indices on the weight's CUDA device, weight in float32, float64, float16 or
// bfloat16. Every call checks the indices on the device and reads 8 bytes back (one host
// synchronisation), so an index out of range is nn's error, naming it; inside a CUDA-graph
// capture, where nothing may be read back, the check is skipped and such an index gives a NaN
// row (forward) and no gradient. backward() checks once (nn's updateGradInput errors).
#pragma once

#include "cudnn/Twin.h"
#include "nn/Embedding.h"

namespace cudnn {

class Embedding : public Twin<nn::Embedding> {
 public:
  using Twin::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
  void accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale = 1.0) override;

 protected:
  void backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) override;

 private:
  // The indices, contiguous, after the checks: on the weight's CUDA device, int64, in range;
  // with gradOutput's checks when it is given.
  tensor::Tensor checked(const tensor::Tensor& input, const tensor::Tensor* gradOutput, const char* method) const;
  void accumulate(const tensor::Tensor& idx, const tensor::Tensor& gradOutput, double scale);
};

}  // namespace cudnn
