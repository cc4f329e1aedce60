// SpatialUpSamplingBase.h: the shared base of SpatialUpSamplingNearest and
// SpatialUpSamplingBilinear, which differ in the output's size and in how an output reads the
// input (resampling()). Input [C x H x W] or [N x C x H x W], any strides, float32 or float64
// (the twins: 16-bit too); output [.. x oH x oW] from outputSize(). Backward is a gather
// (Note [Backward as a gather] in nn/kernels/SpatialIndex.h). Twins: cudnn::SpatialUpSamplingBase.
#pragma once

#include <utility>

#include "nn/Module.h"
#include "nn/kernels/UpSampling.h"

namespace nn {

class SpatialUpSamplingBase : public Module {
 public:
  // What a subclass defines: the output's {height, width} for an input of that size (both >= 1),
  // and the resampling.
  virtual std::pair<int64_t, int64_t> outputSize(int64_t height, int64_t width) const = 0;
  virtual kernels::Resampling resampling() const = 0;

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;

  // The output's shape for `input`; throws unless input is 3-d or 4-d with planes of at least
  // 1 x 1 and the output is at least 1 x 1.
  Shape outputShape(const Tensor& input, const char* method) const;
  // Throws unless gradOutput is defined, has the output's shape and input's dtype and device.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
};

}  // namespace nn
