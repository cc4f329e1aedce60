// VolumetricCrossEntropyCriterion.h: SpatialCrossEntropyCriterion for volumes and videos,
// as cudnn.torch's: input [N x C x T x H x W] scores, target [N x T x H x W] 0-based
// classes; the loss is averaged over all N*T*H*W voxels (by their total class weight with
// weights) under sizeAverage, summed otherwise. Twin: cudnn::VolumetricCrossEntropyCriterion.
#pragma once

#include "nn/PixelCrossEntropy.h"

namespace nn {

class VolumetricCrossEntropyCriterion : public PixelCrossEntropy {
 public:
  explicit VolumetricCrossEntropyCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100)
      : PixelCrossEntropy(3, "nn.VolumetricCrossEntropyCriterion", std::move(weights), sizeAverage, ignoreIndex) {}
  std::string type_name() const override { return "nn.VolumetricCrossEntropyCriterion"; }
};

}  // namespace nn
