// Log.h: y = log(x), any shape (Torch's nn.Log); gradInput = gradOutput / x. log(0) = -Inf,
// log of a negative is NaN (Note [Element-wise staples] in nn/kernels/Activation.h). Backward
// reads the input, so inplace is refused. Prints its type name.
// Twin: cudnn::Log (our kernels: cuDNN has no log mode).
#pragma once

#include "nn/PointwiseBase.h"

namespace nn {

class Log : public ActivationModule<Log, Activation::Log> {
 public:
  static constexpr std::string_view kTypeName = "nn.Log";
};

}  // namespace nn
