// SpatialCrossEntropyCriterion.h: cross entropy of every pixel's class scores, as
// cudnn.torch's (SpatialLogSoftMax over the channels + SpatialClassNLLCriterion): input
// [N x C x H x W] scores, target [N x H x W] 0-based classes (any dtype holding integers);
// the loss is averaged over all N*H*W pixels (by their total class weight with weights) under
// sizeAverage, summed otherwise. Twin: cudnn::SpatialCrossEntropyCriterion.
#pragma once

#include "nn/ClassCriterionBase.h"

namespace nn {

class SpatialCrossEntropyCriterion : public ClassCriterion<SpatialCrossEntropyCriterion, ClassInput::Scores, 2> {
 public:
  using ClassCriterion::ClassCriterion;
  static constexpr std::string_view kTypeName = "nn.SpatialCrossEntropyCriterion";
};

}  // namespace nn
