// VolumetricAveragePooling.h: the mean of each kT x kW x kH window, stride dT x dW x dH
// (default: the kernel, as Torch). Torch's version has no padding; padT, padW, padH, ceil mode
// and count_include_pad here mean what they mean for SpatialAveragePooling (as in cuDNN).
// Input [C x T x H x W] or [N x C x T x H x W]. Twin: cudnn::VolumetricAveragePooling.
#pragma once

#include "nn/PoolingBase.h"

namespace nn {

class VolumetricAveragePooling : public AveragePoolingModule<VolumetricAveragePooling, VolumetricPooling> {
 public:
  // Torch's (kT, kW, kH[, dT, dW, dH[, padT, padW, padH]]), VolumetricPooling's
  using AveragePoolingModule::AveragePoolingModule;
  static constexpr std::string_view kTypeName = "nn.VolumetricAveragePooling";
};

}  // namespace nn
