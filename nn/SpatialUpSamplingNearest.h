// SpatialUpSamplingNearest.h: Torch's nn.SpatialUpSamplingNearest(scale): each input pixel
// repeated into a scale x scale block, output [.. x H scale x W scale] (PyTorch's
// F.interpolate(scale_factor=scale, mode='nearest')); gradInput sums each block of gradOutput.
// Integer scales >= 1, as Torch's. Input [C x H x W] or [N x C x H x W]
// (SpatialUpSamplingBase.h). Twin: cudnn::SpatialUpSamplingNearest.
#pragma once

#include "nn/SpatialUpSamplingBase.h"

namespace nn {

class SpatialUpSamplingNearest : public SpatialUpSamplingBase {
 public:
  explicit SpatialUpSamplingNearest(int64_t scale);

  std::pair<int64_t, int64_t> outputSize(int64_t height, int64_t width) const override;
  kernels::Resampling resampling() const override { return {false, false}; }
  static constexpr std::string_view kTypeName = "nn.SpatialUpSamplingNearest";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.SpatialUpSamplingNearest(2)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t scale_factor;  // Torch's field
};

}  // namespace nn
