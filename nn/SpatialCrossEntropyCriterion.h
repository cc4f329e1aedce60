// SpatialCrossEntropyCriterion.h: cross entropy of every pixel's class scores, as
// cudnn.torch's (SpatialLogSoftMax over the channels + SpatialClassNLLCriterion): input
// [N x C x H x W] scores, target [N x H x W] 0-based classes (any dtype holding integers);
// the loss is averaged over all N*H*W pixels (by their total class weight with weights) under
// sizeAverage, summed otherwise. Twin: cudnn::SpatialCrossEntropyCriterion.
#pragma once

#include "nn/PixelCrossEntropy.h"

namespace nn {

class SpatialCrossEntropyCriterion : public PixelCrossEntropy {
 public:
  explicit SpatialCrossEntropyCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100)
      : PixelCrossEntropy(2, "nn.SpatialCrossEntropyCriterion", std::move(weights), sizeAverage, ignoreIndex) {}
  std::string type_name() const override { return "nn.SpatialCrossEntropyCriterion"; }
};

}  // namespace nn
