// BCEWithLogitsCriterion.h: a sigmoid and binary cross entropy in one stable form (PyTorch's
// BCEWithLogitsLoss): loss = sum_i w_i ((1 - t_i) x_i + (1 + (pw_i - 1) t_i) log(1 + exp(-x_i))),
// the log as log1p(exp(-|x|)) + max(-x, 0), divided by the element count under sizeAverage;
// gradInput = w ((pw t + 1 - t) sigmoid(x) - pw t) / n. weights and posWeight (PyTorch's
// pos_weight, the positive examples' weight, usually [C]): undefined, or shapes ending the
// input's. Arguments in PyTorch's order (weight, size_average, pos_weight).
// Twin: cudnn::BCEWithLogitsCriterion.
#pragma once

#include <string>
#include <utility>

#include "nn/ElementwiseCriterionBase.h"

namespace nn {

class BCEWithLogitsCriterion : public ElementwiseCriterionBase {
 public:
  explicit BCEWithLogitsCriterion(Tensor weights = {}, bool sizeAverage = true, Tensor posWeight = {})
      : ElementwiseCriterionBase(sizeAverage),
        weights(checked_element_weights(kTypeName, std::move(weights))),
        posWeight(checked_element_weights(kTypeName, std::move(posWeight))) {}
  static constexpr std::string_view kTypeName = "nn.BCEWithLogitsCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  Tensor weights, posWeight;

 protected:
  kernels::ElementLossParams params() const override { return {.kind = kernels::ElementLoss::BCEWithLogits}; }
  Tensor elementWeights() const override { return weights; }
  Tensor elementPosWeights() const override { return posWeight; }
  void visitState(StateVisitor& v) override {
    v.buffer("weights", weights);
    v.buffer("pos_weight", posWeight);
  }
};

}  // namespace nn
