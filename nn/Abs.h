// Abs.h: y = |x|, any shape (Torch's nn.Abs); gradInput = gradOutput * sgn(x), PyTorch's
// derivative (sgn(0) = 0 where Torch's THNN takes 1: Note [Element-wise staples] in
// nn/kernels/Activation.h). Backward reads the input, so inplace is refused. Prints its type
// name. Twin: cudnn::Abs (our kernels: cuDNN has no abs mode).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Abs : public ActivationModule<Abs, Activation::Abs> {
 public:
  static constexpr std::string_view kTypeName = "nn.Abs";
};

}  // namespace nn
