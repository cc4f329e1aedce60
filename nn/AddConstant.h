// AddConstant.h: y = x + constant, any shape (Torch's nn.AddConstant(constant_scalar, ip));
// gradInput = gradOutput. In place as ReLU; unlike Torch's, backward does not subtract the
// constant from the input again (Note [Element-wise staples] in nn/kernels/Activation.h).
// Prints its type name, as Torch. Twin: cudnn::AddConstant (our kernels).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class AddConstant : public ActivationModule<AddConstant, Activation::AddConstant> {
 public:
  explicit AddConstant(double constant, bool inplace = false);
  double coef() const override { return constant; }
  static constexpr std::string_view kTypeName = "nn.AddConstant";
  tensor::Json config() const override;  // {"constant": 2, "inplace": false}
  static ModulePtr fromConfig(const tensor::Json& config);

  double constant;  // Torch's constant_scalar
};

}  // namespace nn
