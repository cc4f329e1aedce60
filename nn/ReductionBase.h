// ReductionBase.h: the shared base of the reductions over one dimension (Sum, Mean, Max,
// Min: Torch's nn.Sum, nn.Mean, nn.Max, nn.Min). `dimension` counts from 0, negative from the
// end (PyTorch's convention, as nn::Select; Torch's are 1-based and take nInputDims instead);
// the output drops that dimension (PyTorch's keepdim = false: a vector gives a 0-d tensor).
// Sum sums (sizeAverage: divides by the dimension's size, which is Mean); Max and Min give the
// values only and send the gradient to the first index of the extremum, or to the first NaN
// (PyTorch's choice; Note [NaN and Inf] in nn/kernels/Activation.h). Max and Min refuse an
// empty dimension; Mean over one is NaN. Twins: cudnn::ReductionBase (our kernels).
#pragma once

#include <cstdint>

#include "nn/Module.h"
#include "nn/ModuleConfig.h"

namespace nn {

class ReductionBase : public Module {
 public:
  enum class Kind : uint8_t { Sum, Mean, Max, Min };

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  virtual Kind kind() const = 0;
  tensor::Json config() const override;  // {"dimension": 1}; Sum adds sizeAverage

  int64_t dimension;

  // The input viewed as [outer x n x inner] around the reduced dimension `dim` (resolved).
  struct Layout {
    int64_t dim, outer, n, inner;
    Shape outShape;
  };

 protected:
  explicit ReductionBase(int64_t dimension_) : dimension(dimension_) {}

  // Resolves the dimension against the input (rank >= 1) and, for Max and Min, refuses an
  // empty one; `dtypes`: float32 or float64 only (the nn module; twins check their own).
  Layout checkInput(const Tensor& input, const char* method, bool dtypes = true) const;
  // gradOutput of the output's shape (layout l) and the input's dtype; for Max and Min the
  // indices of the last forward must be there for that shape.
  void checkGradOutput(const Layout& l, const Tensor& input, const Tensor& gradOutput, const char* method) const;

 public:
  // Max and Min: the index of the extremum in the reduced dimension, per output (int64, on
  // the input's device), from the last forward. A buffer of the pass, not state.
  Tensor indices;
};

// What a reduction adds to ReductionBase: its kind and its type name from Self::kTypeName, its
// constructor (dimension) and fromConfig ({"dimension": ..}). A member is `class Max : public
// ReductionModule<Max, ReductionBase::Kind::Max>` with its kTypeName.
template <class Self, ReductionBase::Kind K>
class ReductionModule : public ReductionBase {
 public:
  explicit ReductionModule(int64_t dimension) : ReductionBase(dimension) {}
  Kind kind() const override { return K; }
  std::string type_name() const override { return std::string(Self::kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) {
    ConfigReader c(config, Self::kTypeName);
    const int64_t dimension = c.integer("dimension");
    c.finish();
    return std::make_shared<Self>(dimension);
  }
};

}  // namespace nn
