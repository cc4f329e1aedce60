// VolumetricSoftMax.h: softmax across the feature maps at each location of a
// [C x T x H x W] or [N x C x T x H x W] input. Prints its type name.
// Twin: cudnn::VolumetricSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class VolumetricSoftMax : public SoftMaxModule<VolumetricSoftMax, SoftMaxBase::Family::Volumetric, false> {
 public:
  static constexpr std::string_view kTypeName = "nn.VolumetricSoftMax";
};

}  // namespace nn
