// GELU.h: y = x Phi(x), Phi the standard normal CDF (Hendrycks & Gimpel 2016), any shape;
// approximate = "tanh" is PyTorch's 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The
// backward pass reads the input (not invertible), so there is no in-place variant.
// Prints as "nn.GELU" ("nn.GELU(approximate='tanh')"). Twin: cudnn::GELU (cudnn/GELU.h).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class GELU : public PointwiseBase {
 public:
  explicit GELU(std::string approximate = "none");
  Activation activation() const override { return tanh() ? Activation::GELUTanh : Activation::GELU; }
  static constexpr std::string_view kTypeName = "nn.GELU";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;  // {"approximate": "none"}
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  bool tanh() const { return approximate == "tanh"; }
  std::string approximate;  // "none" or "tanh"
};

}  // namespace nn
