// Tanh.h: y = tanh(x), any shape; gradInput = gradOutput * (1 - y^2). Prints its type name.
// Twin: cudnn::Tanh (CUDNN_ACTIVATION_TANH).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Tanh : public ActivationModule<Tanh, Activation::Tanh> {
 public:
  static constexpr std::string_view kTypeName = "nn.Tanh";
};

}  // namespace nn
