// SpatialLogSoftMax.h: log-softmax across the feature maps at each location of a [C x H x W]
// or [N x C x H x W] input. Prints its type name.
// Twin: cudnn::SpatialLogSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class SpatialLogSoftMax : public SoftMaxModule<SpatialLogSoftMax, SoftMaxBase::Family::Spatial, true> {
 public:
  static constexpr std::string_view kTypeName = "nn.SpatialLogSoftMax";
};

}  // namespace nn
