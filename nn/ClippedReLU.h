// ClippedReLU.h: y = min(max(x, 0), ceiling), any shape (cudnn.torch's ClippedReLU, cuDNN's
// CUDNN_ACTIVATION_CLIPPED_RELU; Torch's nn.Clamp(0, ceiling)). ceiling > 0. In place as
// ReLU. Prints "nn.ClippedReLU" (cudnn.torch defines no __tostring__).
// Twin: cudnn::ClippedReLU.
#pragma once

#include "nn/Pointwise.h"

namespace nn {

class ClippedReLU : public Pointwise {
 public:
  explicit ClippedReLU(double ceiling, bool inplace = false);
  Activation activation() const override { return Activation::ClippedReLU; }
  double coef() const override { return ceiling; }
  std::string type_name() const override { return "nn.ClippedReLU"; }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  double ceiling;
};

}  // namespace nn
