// SpatialMaxPooling.h: the maximum of each kW x kH window, stride dW x dH, with padW, padH
// of padding that never wins (windows are clipped to the input, as THNN and cuDNN do).
// Input [C x H x W] or [N x C x H x W]; output sizes floor (default) or ceil as Torch.
// Ties go to the first maximum (THNN). Twin: cudnn::SpatialMaxPooling.
#pragma once

#include "nn/PoolingBase.h"

namespace nn {

class SpatialMaxPooling : public MaxPoolingModule<SpatialMaxPooling, SpatialPooling> {
 public:
  SpatialMaxPooling(int64_t kW, int64_t kH) : SpatialMaxPooling(kW, kH, kW, kH) {}
  SpatialMaxPooling(int64_t kW, int64_t kH, int64_t dW, int64_t dH, int64_t padW = 0, int64_t padH = 0)
      : MaxPoolingModule(kW, kH, dW, dH, padW, padH) {}
  static constexpr std::string_view kTypeName = "nn.SpatialMaxPooling";
};

}  // namespace nn
