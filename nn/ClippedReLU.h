// ClippedReLU.h: y = min(max(x, 0), ceiling), any shape (cudnn.torch's ClippedReLU, cuDNN's
// CUDNN_ACTIVATION_CLIPPED_RELU; Torch's nn.Clamp(0, ceiling)). ceiling > 0. In place as
// ReLU. Prints its type name (cudnn.torch defines no __tostring__).
// Twin: cudnn::ClippedReLU.
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class ClippedReLU : public ActivationModule<ClippedReLU, Activation::ClippedReLU> {
 public:
  explicit ClippedReLU(double ceiling, bool inplace = false);
  double coef() const override { return ceiling; }
  static constexpr std::string_view kTypeName = "nn.ClippedReLU";
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  double ceiling;
};

}  // namespace nn
