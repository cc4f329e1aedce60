// VolumetricAveragePooling.h: the mean of each kT x kW x kH window, stride dT x dW x dH
// (default: the kernel, as Torch). Torch's version has no padding; padT, padW, padH, ceil mode
// and count_include_pad here mean what they mean for SpatialAveragePooling (as in cuDNN).
// Input [C x T x H x W] or [N x C x T x H x W]. Twin: cudnn::VolumetricAveragePooling.
#pragma once

#include "nn/PoolingBase.h"

namespace nn {

class VolumetricAveragePooling : public AveragePoolingModule<VolumetricAveragePooling, VolumetricPooling> {
 public:
  VolumetricAveragePooling(int64_t kT, int64_t kW, int64_t kH) : VolumetricAveragePooling(kT, kW, kH, kT, kW, kH) {}
  VolumetricAveragePooling(int64_t kT, int64_t kW, int64_t kH, int64_t dT, int64_t dW, int64_t dH, int64_t padT = 0,
                           int64_t padW = 0, int64_t padH = 0)
      : AveragePoolingModule(kT, kW, kH, dT, dW, dH, padT, padW, padH) {}
  static constexpr std::string_view kTypeName = "nn.VolumetricAveragePooling";
};

}  // namespace nn
