// Max.h: the maximum over `dimension` (Torch's nn.Max: values only; 0-based dimensions, negative
// from the end: see nn/ReductionBase.h), the dimension dropped. gradInput is zero but at the
// first index of the maximum (or the first NaN, which is the result), which gets gradOutput:
// PyTorch's choice on ties. Refuses an empty dimension. Prints its type name, as Torch.
// Twin: cudnn::Max (our kernels).
#pragma once

#include "nn/ReductionBase.h"

namespace nn {

class Max : public ReductionModule<Max, ReductionBase::Kind::Max> {
 public:
  using ReductionModule::ReductionModule;
  static constexpr std::string_view kTypeName = "nn.Max";
};

}  // namespace nn
