// SpatialLogSoftMax.h: log-softmax across the feature maps at each location of a [C x H x W]
// or [N x C x H x W] input. Prints its type name.
// Twin: cudnn::SpatialLogSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class SpatialLogSoftMax : public SoftMaxBase {
 public:
  SpatialLogSoftMax() : SoftMaxBase(Family::Spatial, true) {}
  static constexpr std::string_view kTypeName = "nn.SpatialLogSoftMax";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
