// SpatialSoftMax.h: softmax across the feature maps at each location of a [C x H x W] or
// [N x C x H x W] input (cuDNN's CUDNN_SOFTMAX_MODE_CHANNEL). Prints its type name.
// Twin: cudnn::SpatialSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class SpatialSoftMax : public SoftMaxBase {
 public:
  SpatialSoftMax() : SoftMaxBase(Family::Spatial, false) {}
  static constexpr std::string_view kTypeName = "nn.SpatialSoftMax";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
