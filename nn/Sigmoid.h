// Sigmoid.h: y = 1 / (1 + exp(-x)), any shape; gradInput = gradOutput * y * (1 - y).
// Prints "nn.Sigmoid". Twin: cudnn::Sigmoid (CUDNN_ACTIVATION_SIGMOID).
#pragma once

#include "nn/Pointwise.h"

namespace nn {

class Sigmoid : public Pointwise {
 public:
  Sigmoid() = default;
  Activation activation() const override { return Activation::Sigmoid; }
  std::string type_name() const override { return "nn.Sigmoid"; }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
