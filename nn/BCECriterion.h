// BCECriterion.h: binary cross entropy of probabilities (Torch's nn.BCECriterion, PyTorch's
// BCELoss): loss = -sum_i w_i (t_i log(x_i) + (1 - t_i) log(1 - x_i)), each log clamped at -100
// (PyTorch's rule: x = 0 or 1 costs 100, not Inf), divided by the element count under
// sizeAverage; gradInput = w (x - t) / max(x (1 - x), 1e-12) / n. Inputs outside [0, 1] are not
// refused (their logs are NaN, on both backends, with no host read). weights: undefined, or a
// shape ending the input's ([C] for [N x C]). Twin: cudnn::BCECriterion.
#pragma once

#include <string>
#include <utility>

#include "nn/ElementwiseCriterionBase.h"

namespace nn {

class BCECriterion : public ElementwiseCriterionBase {
 public:
  explicit BCECriterion(Tensor weights = {}, bool sizeAverage = true)
      : ElementwiseCriterionBase(sizeAverage), weights(checked_element_weights(kTypeName, std::move(weights))) {}
  static constexpr std::string_view kTypeName = "nn.BCECriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  Tensor weights;

 protected:
  kernels::ElementLossParams params() const override { return {.kind = kernels::ElementLoss::BCE}; }
  Tensor elementWeights() const override { return weights; }
  void visitState(StateVisitor& v) override { v.buffer("weights", weights); }
};

}  // namespace nn
