// Sigmoid.h: y = 1 / (1 + exp(-x)), any shape; gradInput = gradOutput * y * (1 - y).
// Prints its type name. Twin: cudnn::Sigmoid (CUDNN_ACTIVATION_SIGMOID).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Sigmoid : public PointwiseBase {
 public:
  Sigmoid() = default;
  Activation activation() const override { return Activation::Sigmoid; }
  static constexpr std::string_view kTypeName = "nn.Sigmoid";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
