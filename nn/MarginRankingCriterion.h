// MarginRankingCriterion.h: Torch's nn.MarginRankingCriterion(margin): for a table {x1, x2}
// of [N] scores (or one score each) and y of 1 or -1 (x1 should rank higher when y = 1),
// loss = sum_i max(0, -y_i (x1_i - x2_i) + margin), averaged over N under sizeAverage; the
// gradient is {-y, y} where the hinge is active (PyTorch's: zero at the hinge itself).
#pragma once

#include "nn/PairCriterionBase.h"

namespace nn {

class MarginRankingCriterion : public PairCriterionBase {
 public:
  explicit MarginRankingCriterion(double margin = 0, bool sizeAverage = true);
  double updateOutputValue(const Value& input, const Tensor& target) override;
  const Value& updateGradInputValue(const Value& input, const Tensor& target) override;
  static constexpr std::string_view kTypeName = "nn.MarginRankingCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  double margin;
  bool sizeAverage;
};

}  // namespace nn
