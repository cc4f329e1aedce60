// DistKLDivCriterion.h: the Kullback-Leibler divergence of a target distribution from an input of
// log-probabilities (Torch's nn.DistKLDivCriterion, PyTorch's KLDivLoss): per element
// t (log t - x) (0 where t = 0), or with logTarget (the target holds log-probabilities too)
// exp(t) (t - x); summed, then under sizeAverage divided by the element count, or with
// batchMean by the batch size input.size(0) (PyTorch's reduction='batchmean', the divergence's
// true mean). gradInput = -t (logTarget: -exp(t)) over the same divisor.
// Twin: cudnn::DistKLDivCriterion.
#pragma once

#include <string>
#include <utility>

#include "nn/ElementwiseCriterionBase.h"

namespace nn {

class DistKLDivCriterion : public ElementwiseCriterionBase {
 public:
  explicit DistKLDivCriterion(bool sizeAverage = true, bool logTarget = false, bool batchMean = false)
      : ElementwiseCriterionBase(sizeAverage), logTarget(logTarget), batchMean(batchMean) {}
  static constexpr std::string_view kTypeName = "nn.DistKLDivCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  bool logTarget;
  bool batchMean;  // under sizeAverage: divide by input.size(0), not the element count

 protected:
  kernels::ElementLossParams params() const override {
    return {.kind = kernels::ElementLoss::DistKLDiv, .logTarget = logTarget};
  }
  double divisor(const tensor::Shape& input) const override {
    if (!sizeAverage || !batchMean || input.empty() || input[0] == 0) return ElementwiseCriterionBase::divisor(input);
    return static_cast<double>(input[0]);
  }
};

}  // namespace nn
