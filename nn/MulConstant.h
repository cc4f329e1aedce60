// MulConstant.h: y = constant * x, any shape (Torch's nn.MulConstant(constant_scalar, ip));
// gradInput = constant * gradOutput, reading neither the input nor the output. In place as
// ReLU; unlike Torch's, backward does not divide the input back (Note [Element-wise staples]
// in nn/kernels/Activation.h). Prints its type name, as Torch. Twin: cudnn::MulConstant (our
// kernels).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class MulConstant : public ActivationModule<MulConstant, Activation::MulConstant> {
 public:
  explicit MulConstant(double constant, bool inplace = false);
  double coef() const override { return constant; }
  static constexpr std::string_view kTypeName = "nn.MulConstant";
  tensor::Json config() const override;  // {"constant": 2, "inplace": false}
  static ModulePtr fromConfig(const tensor::Json& config);

  double constant;  // Torch's constant_scalar
};

}  // namespace nn
