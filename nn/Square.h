// Square.h: y = x^2, any shape (Torch's nn.Square); gradInput = gradOutput * 2x. Backward
// reads the input, so inplace is refused. Prints its type name. Twin: cudnn::Square (our
// kernels: cuDNN has no square mode).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Square : public ActivationModule<Square, Activation::Square> {
 public:
  static constexpr std::string_view kTypeName = "nn.Square";
};

}  // namespace nn
