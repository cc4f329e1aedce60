// SpatialSoftMax.h: softmax across the feature maps at each location of a [C x H x W] or
// [N x C x H x W] input (cuDNN's CUDNN_SOFTMAX_MODE_CHANNEL). Prints its type name.
// Twin: cudnn::SpatialSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class SpatialSoftMax : public SoftMaxModule<SpatialSoftMax, SoftMaxBase::Family::Spatial, false> {
 public:
  static constexpr std::string_view kTypeName = "nn.SpatialSoftMax";
};

}  // namespace nn
