// SpatialFullConvolution.h: 2-D transposed convolution (the adjoint of SpatialConvolution
// with the same weight): [nInputPlane x H x W] or [batch x nInputPlane x H x W] ->
// nOutputPlane planes of (in - 1) * stride - 2 * pad + k + adj, weight
// [nInputPlane x nOutputPlane/groups x kH x kW] (Torch's layout), bias [nOutputPlane].
// adjW < dW and adjH < dH pick among the output sizes that share one input size.
// Twin: cudnn::SpatialFullConvolution.
#pragma once

#include "nn/ConvolutionBase.h"

namespace nn {

class SpatialFullConvolution : public ConvolutionModule<SpatialFullConvolution, true> {
 public:
  SpatialFullConvolution(int64_t nInputPlane, int64_t nOutputPlane, int64_t kW, int64_t kH, int64_t dW = 1,
                         int64_t dH = 1, int64_t padW = 0, int64_t padH = 0, int64_t adjW = 0, int64_t adjH = 0,
                         int64_t groups = 1);

  ConvSpec spec() const override;
  static constexpr std::string_view kTypeName = "nn.SpatialFullConvolution";
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  // Torch's: nn.SpatialFullConvolution(3 -> 8, 4x4, 2,2[, padW,padH][, adjW,adjH]).
  std::string str() const override;

  int64_t kW, kH, dW, dH, padW, padH, adjW, adjH;
  int64_t groups;
};

}  // namespace nn
