// PairwiseDistance.h: Torch's nn.PairwiseDistance with PyTorch's F.pairwise_distance numbers:
// for a table {x1, x2} of [N x D] (or [D]) tensors, the p-norm of each row of x1 - x2 + eps,
// giving [N] (or a 0-d tensor). p >= 1 (finite); eps = 1e-6 as PyTorch's default keeps the
// gradient finite where the rows are equal. Gradient as PyTorch's norm backward: for p = 2,
// diff / d; in general diff * |diff|^(p-2) / d^(p-1); zero where d is zero. Computed with
// tensor operations, so it runs where its tensors are (Note [Tables] in nn/Value.cpp).
#pragma once

#include "nn/TableModule.h"

namespace nn {

class PairwiseDistance : public TableModule {
 public:
  explicit PairwiseDistance(double p = 2, double eps = 1e-6);
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.PairwiseDistance";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.PairwiseDistance(p=2)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  double p, eps;
};

}  // namespace nn
