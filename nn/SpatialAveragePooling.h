// SpatialAveragePooling.h: the mean of each kW x kH window, stride dW x dH (default 1, as
// Torch), with padW, padH of zero padding. The divisor is the window clipped to the padded
// input with count_include_pad (Torch's default), else the window clipped to the input; in ceil
// mode windows may run past the padding (see nn/kernels/Pooling.h). Input [C x H x W] or
// [N x C x H x W]. Twin: cudnn::SpatialAveragePooling.
#pragma once

#include "nn/PoolingBase.h"

namespace nn {

class SpatialAveragePooling : public AveragePoolingModule<SpatialAveragePooling, SpatialPooling> {
 public:
  SpatialAveragePooling(int64_t kW, int64_t kH, int64_t dW = 1, int64_t dH = 1, int64_t padW = 0, int64_t padH = 0)
      : AveragePoolingModule(kW, kH, dW, dH, padW, padH) {}
  static constexpr std::string_view kTypeName = "nn.SpatialAveragePooling";
  // an absent stride reads as 1, the constructor's default
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigWith(config, 1); }
};

}  // namespace nn
