// Power.h: y = x^pow, any shape (Torch's nn.Power(p)); gradInput = gradOutput * (pow *
// x^(pow-1)), zero for pow = 0 (PyTorch's: Note [Element-wise staples] in
// nn/kernels/Activation.h). A fractional power of a negative is NaN. Backward reads the input,
// so inplace is refused. Prints its type name, as Torch. Twin: cudnn::Power (our kernels).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Power : public ActivationModule<Power, Activation::Power> {
 public:
  explicit Power(double p);
  double coef() const override { return pow; }
  static constexpr std::string_view kTypeName = "nn.Power";
  tensor::Json config() const override;  // {"pow": 2, "inplace": false}
  static ModulePtr fromConfig(const tensor::Json& config);

  double pow;  // Torch's field name
};

}  // namespace nn
