// CosineDistance.h: Torch's nn.CosineDistance: for a table {x1, x2} of [N x D] (or [D])
// tensors, the cosine of the angle between each pair of rows, x1.x2 / sqrt((|x1|^2 + eps)
// (|x2|^2 + eps)) with Torch's eps = 1e-12, giving [N] (or a 0-d tensor); gradients as Torch's:
// x2 / sqrt(..) - out * x1 / (|x1|^2 + eps), and symmetrically. Computed with tensor
// operations, so it runs where its tensors are (Note [Tables] in nn/Value.cpp).
#pragma once

#include "nn/TableModule.h"

namespace nn {

class CosineDistance : public TableModule {
 public:
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.CosineDistance";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
