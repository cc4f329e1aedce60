// PairCriterionBase.h: the base of Torch's criteria whose input is a table {x1, x2}
// (MarginRankingCriterion, CosineEmbeddingCriterion) and whose target y holds 1 or -1 per
// sample. They refuse the tensor interface, naming the table one
// (Criterion::forward(const Value&, target)), and compute with tensor operations, so they run
// where their tensors are (Note [Tables] in nn/Value.cpp) and need no twin. The gradient
// `gradInputValue` is the table {d loss/d x1, d loss/d x2}.
#pragma once

#include "nn/Criterion.h"

namespace nn {

class PairCriterionBase : public Criterion {
 public:
  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;
  bool computesOn(Device) const override { return true; }

 protected:
  PairCriterionBase() = default;
  // {x1, x2}, checked: two float tensors of one shape, dtype and device, with `rank`
  // dimensions or one fewer (a single sample), and y of [N] (or a 0-d / [1] tensor for one
  // sample) of the inputs' dtype and device whose entries are 1 or -1.
  std::pair<Tensor, Tensor> pair(const Value& input, const Tensor& target, int64_t rank, const char* method) const;
};

}  // namespace nn
