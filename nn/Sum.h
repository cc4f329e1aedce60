// Sum.h: the sum over `dimension` (Torch's nn.Sum(dimension, nInputDims, sizeAverage), with
// 0-based dimensions, negative from the end, and no nInputDims: see nn/ReductionBase.h); with
// sizeAverage the mean. The dimension is dropped (PyTorch's keepdim = false); gradInput is
// gradOutput broadcast back along it (divided by its size with sizeAverage). Prints its type
// name, as Torch. Twin: cudnn::Sum (our kernels).
#pragma once

#include "nn/ReductionBase.h"

namespace nn {

class Sum : public ReductionModule<Sum, ReductionBase::Kind::Sum> {
 public:
  explicit Sum(int64_t dimension, bool sizeAverage_ = false) : ReductionModule(dimension), sizeAverage(sizeAverage_) {}
  Kind kind() const override { return sizeAverage ? Kind::Mean : Kind::Sum; }
  static constexpr std::string_view kTypeName = "nn.Sum";
  tensor::Json config() const override;  // {"dimension": 1, "sizeAverage": false}
  static ModulePtr fromConfig(const tensor::Json& config);

  bool sizeAverage;
};

}  // namespace nn
