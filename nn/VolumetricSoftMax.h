// VolumetricSoftMax.h: softmax across the feature maps at each location of a
// [C x T x H x W] or [N x C x T x H x W] input. Prints its type name.
// Twin: cudnn::VolumetricSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class VolumetricSoftMax : public SoftMaxBase {
 public:
  VolumetricSoftMax() : SoftMaxBase(Family::Volumetric, false) {}
  static constexpr std::string_view kTypeName = "nn.VolumetricSoftMax";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
