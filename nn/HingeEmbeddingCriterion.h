// HingeEmbeddingCriterion.h: Torch's nn.HingeEmbeddingCriterion(margin) (PyTorch's
// HingeEmbeddingLoss): per element, x where the target is 1 and max(0, margin - x) where it is
// -1, summed and divided by the element count under sizeAverage. Targets are not checked: a
// value other than +-1 takes both terms, as PyTorch's formula does. Twin:
// cudnn::HingeEmbeddingCriterion.
#pragma once

#include <string>
#include <utility>

#include "nn/ElementwiseCriterionBase.h"

namespace nn {

class HingeEmbeddingCriterion : public ElementwiseCriterionBase {
 public:
  explicit HingeEmbeddingCriterion(double margin = 1.0, bool sizeAverage = true)
      : ElementwiseCriterionBase(sizeAverage), margin(margin) {}
  static constexpr std::string_view kTypeName = "nn.HingeEmbeddingCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  double margin;

 protected:
  kernels::ElementLossParams params() const override {
    return {.kind = kernels::ElementLoss::HingeEmbedding, .margin = margin};
  }
};

}  // namespace nn
