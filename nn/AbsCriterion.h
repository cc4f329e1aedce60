// AbsCriterion.h: the L1 loss (Torch's nn.AbsCriterion, PyTorch's L1Loss): loss = sum |input -
// target|, divided by the element count under sizeAverage; gradInput = sign(input - target) / n
// (0 where they are equal, as PyTorch). Input and target of one shape. Twin: cudnn::AbsCriterion.
#pragma once

#include <string>
#include <utility>

#include "nn/ElementwiseCriterionBase.h"

namespace nn {

class AbsCriterion : public ElementwiseCriterionBase {
 public:
  explicit AbsCriterion(bool sizeAverage = true) : ElementwiseCriterionBase(sizeAverage) {}
  static constexpr std::string_view kTypeName = "nn.AbsCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

 protected:
  kernels::ElementLossParams params() const override { return {.kind = kernels::ElementLoss::Abs}; }
};

}  // namespace nn
