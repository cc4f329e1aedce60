// Min.h: the minimum over `dimension` (Torch's nn.Min: values only; 0-based dimensions, negative
// from the end: see nn/ReductionBase.h), the dimension dropped. gradInput is zero but at the
// first index of the minimum (or the first NaN, which is the result), which gets gradOutput:
// PyTorch's choice on ties. Refuses an empty dimension. Prints its type name, as Torch.
// Twin: cudnn::Min (our kernels).
#pragma once

#include "nn/ReductionBase.h"

namespace nn {

class Min : public ReductionModule<Min, ReductionBase::Kind::Min> {
 public:
  using ReductionModule::ReductionModule;
  static constexpr std::string_view kTypeName = "nn.Min";
};

}  // namespace nn
