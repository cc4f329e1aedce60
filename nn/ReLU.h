// ReLU.h: y = max(x, 0), any shape. ReLU(true) works in place (output shares the input's
// storage; gradInput reuses gradOutput's). Prints "nn.ReLU" as Torch does (in place or not).
// Twin: cudnn::ReLU (CUDNN_ACTIVATION_RELU).
#pragma once

#include "nn/Pointwise.h"

namespace nn {

class ReLU : public Pointwise {
 public:
  explicit ReLU(bool inplace = false);
  Activation activation() const override { return Activation::ReLU; }
  std::string type_name() const override { return "nn.ReLU"; }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
