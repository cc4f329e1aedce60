// VolumetricCrossEntropyCriterion.h: SpatialCrossEntropyCriterion for volumes and videos,
// as cudnn.torch's: input [N x C x T x H x W] scores, target [N x T x H x W] 0-based
// classes; the loss is averaged over all N*T*H*W voxels (by their total class weight with
// weights) under sizeAverage, summed otherwise. Twin: cudnn::VolumetricCrossEntropyCriterion.
#pragma once

#include "nn/ClassCriterionBase.h"

namespace nn {

class VolumetricCrossEntropyCriterion : public ClassCriterion<VolumetricCrossEntropyCriterion, ClassInput::Scores, 3> {
 public:
  using ClassCriterion::ClassCriterion;
  static constexpr std::string_view kTypeName = "nn.VolumetricCrossEntropyCriterion";
};

}  // namespace nn
