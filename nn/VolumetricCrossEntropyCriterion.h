// VolumetricCrossEntropyCriterion.h: SpatialCrossEntropyCriterion for volumes and videos,
// as cudnn.torch's: input [N x C x T x H x W] scores, target [N x T x H x W] 0-based
// classes; the loss is averaged over all N*T*H*W voxels (by their total class weight with
// weights) under sizeAverage, summed otherwise. Twin: cudnn::VolumetricCrossEntropyCriterion.
#pragma once

#include "nn/PixelCrossEntropyBase.h"

namespace nn {

class VolumetricCrossEntropyCriterion : public PixelCrossEntropyBase {
 public:
  explicit VolumetricCrossEntropyCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100)
      : PixelCrossEntropyBase(3, kTypeName, std::move(weights), sizeAverage, ignoreIndex) {}
  static constexpr std::string_view kTypeName = "nn.VolumetricCrossEntropyCriterion";
  std::string type_name() const override { return std::string(kTypeName); }
};

}  // namespace nn
