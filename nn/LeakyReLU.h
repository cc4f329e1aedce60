// LeakyReLU.h: y = x for x > 0, negative_slope * x otherwise, any shape (PyTorch's default
// slope 0.01). In place as ReLU, for a slope >= 0 (as PyTorch: with a negative slope the
// output's sign does not tell the input's, and backward reads the input). Prints as
// "nn.LeakyReLU(0.01)". Twin: cudnn::LeakyReLU (cudnn/LeakyReLU.h).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class LeakyReLU : public ActivationModule<LeakyReLU, Activation::LeakyReLU> {
 public:
  explicit LeakyReLU(double negativeSlope = 0.01, bool inplace = false);
  double coef() const override { return negativeSlope; }
  static constexpr std::string_view kTypeName = "nn.LeakyReLU";
  tensor::Json config() const override;  // {"negative_slope": 0.01, "inplace": false}
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  double negativeSlope;
};

}  // namespace nn
