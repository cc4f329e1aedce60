// VolumetricFullConvolution.h: 3-D transposed convolution (the adjoint of VolumetricConvolution
// with the same weight): [nInputPlane x T x H x W] or [batch x nInputPlane x T x H x W] ->
// nOutputPlane volumes of (in - 1) * stride - 2 * pad + k + adj, weight
// [nInputPlane x nOutputPlane/groups x kT x kH x kW] (Torch's layout), bias [nOutputPlane].
// Twin: cudnn::VolumetricFullConvolution.
#pragma once

#include "nn/ConvolutionBase.h"

namespace nn {

class VolumetricFullConvolution : public ConvolutionModule<VolumetricFullConvolution, true> {
 public:
  VolumetricFullConvolution(int64_t nInputPlane, int64_t nOutputPlane, int64_t kT, int64_t kW, int64_t kH,
                            int64_t dT = 1, int64_t dW = 1, int64_t dH = 1, int64_t padT = 0, int64_t padW = 0,
                            int64_t padH = 0, int64_t adjT = 0, int64_t adjW = 0, int64_t adjH = 0, int64_t groups = 1);

  ConvSpec spec() const override;
  static constexpr std::string_view kTypeName = "nn.VolumetricFullConvolution";
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  // Torch's: nn.VolumetricFullConvolution(3 -> 8, 3x4x4, 1,2,2[, pads][, adjs]) (T, W, H order).
  std::string str() const override;

  int64_t kT, kW, kH, dT, dW, dH, padT, padW, padH, adjT, adjW, adjH;
  int64_t groups;
};

}  // namespace nn
