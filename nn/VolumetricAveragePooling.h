// VolumetricAveragePooling.h: the mean of each kT x kW x kH window, stride dT x dW x dH
// (default: the kernel, as Torch). Torch's version has no padding; padT, padW, padH, ceil mode
// and count_include_pad here mean what they mean for SpatialAveragePooling (as in cuDNN).
// Input [C x T x H x W] or [N x C x T x H x W]. Twin: cudnn::VolumetricAveragePooling.
#pragma once

#include "nn/PoolingBase.h"

namespace nn {

class VolumetricAveragePooling : public VolumetricPooling {
 public:
  VolumetricAveragePooling(int64_t kT, int64_t kW, int64_t kH) : VolumetricAveragePooling(kT, kW, kH, kT, kW, kH) {}
  VolumetricAveragePooling(int64_t kT, int64_t kW, int64_t kH, int64_t dT, int64_t dW, int64_t dH, int64_t padT = 0,
                           int64_t padW = 0, int64_t padH = 0);

  VolumetricAveragePooling& ceil() {
    ceil_mode = true;
    return *this;
  }
  VolumetricAveragePooling& floor() {
    ceil_mode = false;
    return *this;
  }
  VolumetricAveragePooling& setCountIncludePad() {
    count_include_pad = true;
    return *this;
  }
  VolumetricAveragePooling& setCountExcludePad() {
    count_include_pad = false;
    return *this;
  }

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.VolumetricAveragePooling";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  bool count_include_pad = true;
};

}  // namespace nn
