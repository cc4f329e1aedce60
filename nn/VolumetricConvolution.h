// VolumetricConvolution.h: 3-D cross-correlation of [nInputPlane x T x H x W] or
// [batch x nInputPlane x T x H x W] with weight [nOutputPlane x nInputPlane/groups x kT x kH x kW],
// plus bias [nOutputPlane] (unless noBias()), with stride and zero padding.
// Twin: cudnn::VolumetricConvolution.
#pragma once

#include "nn/ConvolutionBase.h"

namespace nn {

class VolumetricConvolution : public ConvolutionModule<VolumetricConvolution, false> {
 public:
  VolumetricConvolution(int64_t nInputPlane, int64_t nOutputPlane, int64_t kT, int64_t kW, int64_t kH,
                        int64_t dT = 1, int64_t dW = 1, int64_t dH = 1, int64_t padT = 0, int64_t padW = 0,
                        int64_t padH = 0, int64_t groups = 1);

  ConvSpec spec() const override;
  static constexpr std::string_view kTypeName = "nn.VolumetricConvolution";
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  // Torch's: nn.VolumetricConvolution(3 -> 8, 3x5x5, 1,2,2[, padT,padW,padH]) (kT x kW x kH).
  std::string str() const override;

  int64_t kT, kW, kH, dT, dW, dH, padT, padW, padH;
  int64_t groups;
};

}  // namespace nn
