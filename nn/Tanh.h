// Tanh.h: y = tanh(x), any shape; gradInput = gradOutput * (1 - y^2). Prints its type name.
// Twin: cudnn::Tanh (CUDNN_ACTIVATION_TANH).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Tanh : public PointwiseBase {
 public:
  Tanh() = default;
  Activation activation() const override { return Activation::Tanh; }
  static constexpr std::string_view kTypeName = "nn.Tanh";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
