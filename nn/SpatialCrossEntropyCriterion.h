// SpatialCrossEntropyCriterion.h: cross entropy of every pixel's class scores, as
// cudnn.torch's (SpatialLogSoftMax over the channels + SpatialClassNLLCriterion): input
// [N x C x H x W] scores, target [N x H x W] 0-based classes (any dtype holding integers);
// the loss is averaged over all N*H*W pixels (by their total class weight with weights) under
// sizeAverage, summed otherwise. Twin: cudnn::SpatialCrossEntropyCriterion.
#pragma once

#include "nn/PixelCrossEntropyBase.h"

namespace nn {

class SpatialCrossEntropyCriterion : public PixelCrossEntropyBase {
 public:
  explicit SpatialCrossEntropyCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100)
      : PixelCrossEntropyBase(2, kTypeName, std::move(weights), sizeAverage, ignoreIndex) {}
  static constexpr std::string_view kTypeName = "nn.SpatialCrossEntropyCriterion";
  std::string type_name() const override { return std::string(kTypeName); }
};

}  // namespace nn
