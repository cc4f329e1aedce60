// ReLU.h: y = max(x, 0), any shape. ReLU(true) works in place (output shares the input's
// storage; gradInput reuses gradOutput's). Prints its type name as Torch does (in place or not).
// Twin: cudnn::ReLU (CUDNN_ACTIVATION_RELU).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class ReLU : public ActivationModule<ReLU, Activation::ReLU> {
 public:
  using ActivationModule::ActivationModule;
  static constexpr std::string_view kTypeName = "nn.ReLU";
};

}  // namespace nn
