// Sqrt.h: y = sqrt(x), any shape (Torch's nn.Sqrt, without its unused eps argument);
// gradInput = gradOutput / (2y) from the output, PyTorch's (+-Inf at y = +-0, where Torch's
// THNN gives 0: Note [Element-wise staples] in nn/kernels/Activation.h); sqrt of a negative
// is NaN. In place through the public `inplace` field. Prints its type name.
// Twin: cudnn::Sqrt (our kernels: cuDNN has no sqrt mode).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Sqrt : public ActivationModule<Sqrt, Activation::Sqrt> {
 public:
  static constexpr std::string_view kTypeName = "nn.Sqrt";
};

}  // namespace nn
