// SmoothL1Criterion.h: the Huber-like loss of Torch's nn.SmoothL1Criterion with PyTorch's beta
// (SmoothL1Loss): per element, with d = input - target, 0.5 d^2 / beta where |d| < beta and
// |d| - 0.5 beta elsewhere (beta 0: |d|, the L1 loss), summed and divided by the element count
// under sizeAverage. Input and target of one shape. Twin: cudnn::SmoothL1Criterion.
#pragma once

#include <string>
#include <utility>

#include "nn/ElementwiseCriterionBase.h"

namespace nn {

class SmoothL1Criterion : public ElementwiseCriterionBase {
 public:
  explicit SmoothL1Criterion(bool sizeAverage = true, double beta = 1.0)
      : ElementwiseCriterionBase(sizeAverage), beta(beta) {}
  static constexpr std::string_view kTypeName = "nn.SmoothL1Criterion";
  std::string type_name() const override { return std::string(kTypeName); }

  double beta;  // >= 0

 protected:
  kernels::ElementLossParams params() const override { return {.kind = kernels::ElementLoss::SmoothL1, .beta = beta}; }
};

}  // namespace nn
