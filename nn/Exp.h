// Exp.h: y = exp(x), any shape (Torch's nn.Exp); gradInput = gradOutput * y, from the output.
// In place through the public `inplace` field. Prints its type name.
// Twin: cudnn::Exp (our kernels: cuDNN has no exp mode).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Exp : public ActivationModule<Exp, Activation::Exp> {
 public:
  static constexpr std::string_view kTypeName = "nn.Exp";
};

}  // namespace nn
