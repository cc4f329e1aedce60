// Tanh.h: y = tanh(x), any shape; gradInput = gradOutput * (1 - y^2). Prints "nn.Tanh".
// Twin: cudnn::Tanh (CUDNN_ACTIVATION_TANH).
#pragma once

#include "nn/Pointwise.h"

namespace nn {

class Tanh : public Pointwise {
 public:
  Tanh() = default;
  Activation activation() const override { return Activation::Tanh; }
  std::string type_name() const override { return "nn.Tanh"; }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
