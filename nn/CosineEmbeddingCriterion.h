// CosineEmbeddingCriterion.h: Torch's nn.CosineEmbeddingCriterion(margin) with PyTorch's
// numbers: for a table {x1, x2} of [N x D] rows (or [D]) and y of 1 or -1, with
// cos_i = x1_i . x2_i / sqrt((|x1_i|^2 + 1e-12)(|x2_i|^2 + 1e-12)), the loss of a sample is
// 1 - cos where y = 1 and max(0, cos - margin) where y = -1, summed, averaged over N under
// sizeAverage. Gradients through cos as CosineDistance's (nn/CosineDistance.h).
#pragma once

#include "nn/PairCriterionBase.h"

namespace nn {

class CosineEmbeddingCriterion : public PairCriterionBase {
 public:
  explicit CosineEmbeddingCriterion(double margin = 0, bool sizeAverage = true);
  double updateOutputValue(const Value& input, const Tensor& target) override;
  const Value& updateGradInputValue(const Value& input, const Tensor& target) override;
  static constexpr std::string_view kTypeName = "nn.CosineEmbeddingCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  double margin;
  bool sizeAverage;

 private:
  // per sample: the loss and d loss / d cos
  std::pair<Tensor, Tensor> lossAndSlope(const Tensor& cos, const Tensor& y) const;
};

}  // namespace nn
