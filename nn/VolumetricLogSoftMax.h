// VolumetricLogSoftMax.h: log-softmax across the feature maps at each location of a
// [C x T x H x W] or [N x C x T x H x W] input. Prints its type name.
// Twin: cudnn::VolumetricLogSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class VolumetricLogSoftMax : public SoftMaxBase {
 public:
  VolumetricLogSoftMax() : SoftMaxBase(Family::Volumetric, true) {}
  static constexpr std::string_view kTypeName = "nn.VolumetricLogSoftMax";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
