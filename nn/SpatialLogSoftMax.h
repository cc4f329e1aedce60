// SpatialLogSoftMax.h: log-softmax across the feature maps at each location of a [C x H x W]
// or [N x C x H x W] input. Prints "nn.SpatialLogSoftMax".
// Twin: cudnn::SpatialLogSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class SpatialLogSoftMax : public SoftMaxBase {
 public:
  SpatialLogSoftMax() : SoftMaxBase(Family::Spatial, true) {}
  std::string type_name() const override { return "nn.SpatialLogSoftMax"; }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
