// SpatialDilatedConvolution.h: nn::SpatialConvolution with Torch's constructor for dilated
// (atrous) kernels: tap (i, j) of the kernel reads input (y*dH - padH + i*dilationH,
// x*dW - padW + j*dilationW). Same shapes and parameters as SpatialConvolution.
// Twin: cudnn::SpatialDilatedConvolution.
#pragma once

#include "nn/SpatialConvolution.h"

namespace nn {

class SpatialDilatedConvolution : public SpatialConvolution {
 public:
  SpatialDilatedConvolution(int64_t nInputPlane, int64_t nOutputPlane, int64_t kW, int64_t kH, int64_t dW = 1,
                            int64_t dH = 1, int64_t padW = 0, int64_t padH = 0, int64_t dilationW = 1,
                            int64_t dilationH = 1);

  static constexpr std::string_view kTypeName = "nn.SpatialDilatedConvolution";

  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
  // Torch's: nn.SpatialDilatedConvolution(3 -> 8, 3x3, 1,1, 2,2, 2,2): dilation always shown.
  std::string str() const override;
};

}  // namespace nn
