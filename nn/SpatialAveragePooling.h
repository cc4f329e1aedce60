// SpatialAveragePooling.h: the mean of each kW x kH window, stride dW x dH (default 1, as
// Torch), with padW, padH of zero padding. The divisor is the window clipped to the padded
// input with count_include_pad (Torch's default), else the window clipped to the input; in ceil
// mode windows may run past the padding (see nn/kernels/Pooling.h). Input [C x H x W] or
// [N x C x H x W]. Twin: cudnn::SpatialAveragePooling.
#pragma once

#include "nn/PoolingBase.h"

namespace nn {

class SpatialAveragePooling : public SpatialPooling {
 public:
  SpatialAveragePooling(int64_t kW, int64_t kH, int64_t dW = 1, int64_t dH = 1, int64_t padW = 0, int64_t padH = 0);

  SpatialAveragePooling& ceil() {
    ceil_mode = true;
    return *this;
  }
  SpatialAveragePooling& floor() {
    ceil_mode = false;
    return *this;
  }
  SpatialAveragePooling& setCountIncludePad() {
    count_include_pad = true;
    return *this;
  }
  SpatialAveragePooling& setCountExcludePad() {
    count_include_pad = false;
    return *this;
  }

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.SpatialAveragePooling";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  bool count_include_pad = true;
};

}  // namespace nn
