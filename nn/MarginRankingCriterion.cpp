// MarginRankingCriterion.cpp
#include "nn/MarginRankingCriterion.h"

#include <cmath>

namespace nn {

MarginRankingCriterion::MarginRankingCriterion(double margin_, bool sizeAverage_)
    : margin(margin_), sizeAverage(sizeAverage_) {
  if (!std::isfinite(margin))
    throw Error(std::string(kTypeName) + ": expected a finite margin, got " + std::to_string(margin));
}

double MarginRankingCriterion::updateOutputValue(const Value& input, const Tensor& target) {
  const auto [x1, x2] = pair(input, target, 1, "updateOutput");
  const Tensor y = target.reshape(x1.sizes());
  const Tensor hinge = x2.sub(x1).mul(y).add(margin).relu();
  const double sum = hinge.sum().item();
  return sizeAverage ? sum / static_cast<double>(std::max<int64_t>(hinge.numel(), 1)) : sum;
}

const Value& MarginRankingCriterion::updateGradInputValue(const Value& input, const Tensor& target) {
  const auto [x1, x2] = pair(input, target, 1, "updateGradInput");
  const Tensor y = target.reshape(x1.sizes());
  const Tensor active = x2.sub(x1).mul(y).add(margin).gt(0).to(x1.dtype());
  Tensor g1 = y.neg().mul(active);
  if (sizeAverage && g1.numel() > 0) g1 = g1.div(static_cast<double>(g1.numel()));
  gradInputValue = Table{g1, g1.neg()};
  return gradInputValue;
}

}  // namespace nn
