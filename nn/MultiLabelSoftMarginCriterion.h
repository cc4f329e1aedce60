// MultiLabelSoftMarginCriterion.h: multi-label one-versus-all loss over [N x C] scores (or [C])
// and 0/1 targets of that shape (Torch's nn.MultiLabelSoftMarginCriterion, PyTorch's
// MultiLabelSoftMarginLoss): per sample -1/C sum_c w_c (t log sigmoid(x) + (1 - t) log
// sigmoid(-x)), the logs in their stable form; the samples' mean under sizeAverage, their sum
// otherwise (PyTorch's reductions: Torch's sum did not divide by C). weights: undefined or [C]
// (any shape ending the input's). Twin: cudnn::MultiLabelSoftMarginCriterion.
#pragma once

#include <string>
#include <utility>

#include "nn/ElementwiseCriterionBase.h"

namespace nn {

class MultiLabelSoftMarginCriterion : public ElementwiseCriterionBase {
 public:
  explicit MultiLabelSoftMarginCriterion(Tensor weights = {}, bool sizeAverage = true)
      : ElementwiseCriterionBase(sizeAverage), weights(checked_element_weights(kTypeName, std::move(weights))) {}
  static constexpr std::string_view kTypeName = "nn.MultiLabelSoftMarginCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  Tensor weights;

 protected:
  kernels::ElementLossParams params() const override { return {.kind = kernels::ElementLoss::MultiLabelSoftMargin}; }
  Tensor elementWeights() const override { return weights; }
  void visitState(StateVisitor& v) override { v.buffer("weights", weights); }
  // the element count under sizeAverage, the class count (the last dimension) otherwise
  double divisor(const tensor::Shape& input) const override {
    if (sizeAverage || input.empty() || input.back() == 0) return ElementwiseCriterionBase::divisor(input);
    return static_cast<double>(input.back());
  }
};

}  // namespace nn
