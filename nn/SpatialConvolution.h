// SpatialConvolution.h: 2-D cross-correlation of [nInputPlane x H x W] or
// [batch x nInputPlane x H x W] with weight [nOutputPlane x nInputPlane/groups x kH x kW],
// plus bias [nOutputPlane] (unless noBias()), with stride, zero padding, groups and dilation
// (fields dilationW/dilationH; nn::SpatialDilatedConvolution sets them in its constructor).
// Twin: cudnn::SpatialConvolution.
#pragma once

#include "nn/ConvolutionBase.h"

namespace nn {

class SpatialConvolution : public ConvolutionModule<SpatialConvolution, false> {
 public:
  SpatialConvolution(int64_t nInputPlane, int64_t nOutputPlane, int64_t kW, int64_t kH, int64_t dW = 1,
                     int64_t dH = 1, int64_t padW = 0, int64_t padH = 0, int64_t groups = 1);

  ConvSpec spec() const override;
  static constexpr std::string_view kTypeName = "nn.SpatialConvolution";
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  // Torch's: nn.SpatialConvolution(3 -> 96, 11x11, 3,3[, padW,padH]); dilation and groups
  // are appended when not 1.
  std::string str() const override;

  int64_t kW, kH, dW, dH, padW, padH;
  int64_t dilationW = 1, dilationH = 1;
  int64_t groups;
};

}  // namespace nn
