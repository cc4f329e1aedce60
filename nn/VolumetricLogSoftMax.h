// VolumetricLogSoftMax.h: log-softmax across the feature maps at each location of a
// [C x T x H x W] or [N x C x T x H x W] input. Prints its type name.
// Twin: cudnn::VolumetricLogSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class VolumetricLogSoftMax : public SoftMaxModule<VolumetricLogSoftMax, SoftMaxBase::Family::Volumetric, true> {
 public:
  static constexpr std::string_view kTypeName = "nn.VolumetricLogSoftMax";
};

}  // namespace nn
