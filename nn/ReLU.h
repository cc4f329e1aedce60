// ReLU.h: y = max(x, 0), any shape. ReLU(true) works in place (output shares the input's
// storage; gradInput reuses gradOutput's). Prints its type name as Torch does (in place or not).
// Twin: cudnn::ReLU (CUDNN_ACTIVATION_RELU).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class ReLU : public PointwiseBase {
 public:
  explicit ReLU(bool inplace = false);
  Activation activation() const override { return Activation::ReLU; }
  static constexpr std::string_view kTypeName = "nn.ReLU";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
