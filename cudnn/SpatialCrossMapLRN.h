// SpatialCrossMapLRN.h: the cuDNN twin of nn::SpatialCrossMapLRN (cudnnLRNCrossChannelForward
// through cudnn::LRNPlan, the backward our kernel): y = x * (k + alpha / size * sum of x^2 over the channels
// [c - (size - 1) / 2, c + size / 2])^-beta, the nn module's window for odd and even sizes.
// Input [C x H x W] (run as a batch of one) or [N x C x H x W] on a CUDA device, float32,
// float64, float16 or bfloat16. cuDNN takes size 1..16, k >= 1e-5 and beta >= 0.01: other
// settings throw at forward (keep such a layer in nn with convert's exclude predicate).
// Backward reads x and gradOutput alone (Note [LRN backward] in cudnn/kernels/LRN.cu), so it
// needs no matching forward, and a later in-place layer writing into `output` (ReLU(true))
// cannot change the gradient, as it cannot change nn's. `scale` is not computed (cuDNN keeps it
// inside); the twin's forward drops any the nn module held.
#pragma once

#include <string>

#include "cudnn/Opaque.h"
#include "cudnn/Twin.h"
#include "nn/SpatialCrossMapLRN.h"

namespace cudnn {

class LRNPlan;  // cudnn/ops/lrn.h (not installed)

class SpatialCrossMapLRN : public Twin<nn::SpatialCrossMapLRN> {
 public:
  using Twin::Twin;

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;

 private:
  int checkedSize(const std::string& where) const;  // size as cuDNN takes it, after check_lrn_arguments
  detail::Opaque<LRNPlan> plan_;
};

}  // namespace cudnn
