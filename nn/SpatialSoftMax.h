// SpatialSoftMax.h: softmax across the feature maps at each location of a [C x H x W] or
// [N x C x H x W] input (cuDNN's CUDNN_SOFTMAX_MODE_CHANNEL). Prints "nn.SpatialSoftMax".
// Twin: cudnn::SpatialSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class SpatialSoftMax : public SoftMaxBase {
 public:
  SpatialSoftMax() : SoftMaxBase(Family::Spatial, false) {}
  std::string type_name() const override { return "nn.SpatialSoftMax"; }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
