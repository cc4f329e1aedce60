// VolumetricMaxPooling.h: the maximum of each kT x kW x kH window, stride dT x dW x dH,
// with padT, padW, padH of padding that never wins (windows are clipped to the input).
// Input [C x T x H x W] or [N x C x T x H x W]; output sizes floor (default) or ceil as
// Torch. Ties go to the first maximum (THNN). Twin: cudnn::VolumetricMaxPooling.
#pragma once

#include "nn/PoolingBase.h"

namespace nn {

class VolumetricMaxPooling : public MaxPoolingModule<VolumetricMaxPooling, VolumetricPooling> {
 public:
  // Torch's (kT, kW, kH[, dT, dW, dH[, padT, padW, padH]]), VolumetricPooling's
  using MaxPoolingModule::MaxPoolingModule;
  static constexpr std::string_view kTypeName = "nn.VolumetricMaxPooling";
};

}  // namespace nn
