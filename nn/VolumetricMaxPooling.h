// VolumetricMaxPooling.h: the maximum of each kT x kW x kH window, stride dT x dW x dH,
// with padT, padW, padH of padding that never wins (windows are clipped to the input).
// Input [C x T x H x W] or [N x C x T x H x W]; output sizes floor (default) or ceil as
// Torch. Ties go to the first maximum (THNN). Twin: cudnn::VolumetricMaxPooling.
#pragma once

#include "nn/PoolingBase.h"

namespace nn {

class VolumetricMaxPooling : public VolumetricPooling {
 public:
  VolumetricMaxPooling(int64_t kT, int64_t kW, int64_t kH) : VolumetricMaxPooling(kT, kW, kH, kT, kW, kH) {}
  VolumetricMaxPooling(int64_t kT, int64_t kW, int64_t kH, int64_t dT, int64_t dW, int64_t dH, int64_t padT = 0,
                       int64_t padW = 0, int64_t padH = 0);

  VolumetricMaxPooling& ceil() {
    ceil_mode = true;
    return *this;
  }
  VolumetricMaxPooling& floor() {
    ceil_mode = false;
    return *this;
  }

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.VolumetricMaxPooling";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);

  Tensor indices;  // Int64, the output's shape: each maximum's offset ((t * H + h) * W + w) in its plane
};

}  // namespace nn
