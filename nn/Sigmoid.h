// Sigmoid.h: y = 1 / (1 + exp(-x)), any shape; gradInput = gradOutput * y * (1 - y).
// Prints its type name. Twin: cudnn::Sigmoid (CUDNN_ACTIVATION_SIGMOID).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Sigmoid : public ActivationModule<Sigmoid, Activation::Sigmoid> {
 public:
  static constexpr std::string_view kTypeName = "nn.Sigmoid";
};

}  // namespace nn
