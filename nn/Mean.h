// Mean.h: the mean over `dimension` (Torch's nn.Mean, a Sum with sizeAverage; 0-based
// dimensions, negative from the end: see nn/ReductionBase.h), the dimension dropped; over an
// empty dimension NaN (0 / 0, as PyTorch). gradInput = gradOutput / size, broadcast back.
// Prints its type name, as Torch. Twin: cudnn::Mean (our kernels).
#pragma once

#include "nn/ReductionBase.h"

namespace nn {

class Mean : public ReductionModule<Mean, ReductionBase::Kind::Mean> {
 public:
  using ReductionModule::ReductionModule;
  static constexpr std::string_view kTypeName = "nn.Mean";
};

}  // namespace nn
