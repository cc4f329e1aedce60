// SpatialUpSamplingBilinear.h: Torch's nn.SpatialUpSamplingBilinear(scale) or
// ({oheight, owidth}), with PyTorch's align_corners (default true: Torch's, and PyTorch's
// UpsamplingBilinear2d). Each output is PyTorch's F.interpolate(size=(oH, oW), mode='bilinear',
// align_corners) of the input: align_corners maps the corner pixels' centres onto each other
// (src = o (in - 1) / (out - 1)), otherwise the pixels' areas (src = (o + 1/2) in / out - 1/2,
// clamped at 0). See Note [Bilinear output size]. gradInput: each input's weighted sum of the
// gradOutputs that read it. Input [C x H x W] or [N x C x H x W] (SpatialUpSamplingBase.h).
// Twin: cudnn::SpatialUpSamplingBilinear.
#pragma once

#include "nn/SpatialUpSamplingBase.h"

namespace nn {

// Note [Bilinear output size]
// From a scale, Torch's module makes (H - 1) scale + 1 rows (its corners-aligned grid with
// `scale` output steps between input pixels); PyTorch's interpolate makes H scale. We keep
// Torch's size where Torch defines the grid, align_corners = true, and take PyTorch's, H scale,
// for align_corners = false, which Torch lacks, so that each mode's scale is exact. A size
// given as {oheight, owidth} is taken as it is in both modes.
class SpatialUpSamplingBilinear : public SpatialUpSamplingBase {
 public:
  struct Size {
    int64_t oheight, owidth;
  };
  explicit SpatialUpSamplingBilinear(int64_t scale, bool alignCorners = true);
  explicit SpatialUpSamplingBilinear(Size size, bool alignCorners = true);

  std::pair<int64_t, int64_t> outputSize(int64_t height, int64_t width) const override;
  kernels::Resampling resampling() const override { return {true, align_corners}; }
  static constexpr std::string_view kTypeName = "nn.SpatialUpSamplingBilinear";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.SpatialUpSamplingBilinear(2), (5x7, align_corners=false)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t scale_factor = 0;  // Torch's fields: a scale, or (0) the size below
  int64_t oheight = 0, owidth = 0;
  bool align_corners = true;
};

}  // namespace nn
