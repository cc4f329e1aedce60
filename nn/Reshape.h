// Reshape.h: output = input reshaped to `size`, or to [batch x size...] where the input is
// a batch, as Torch's nn.Reshape(..., batchMode): with batchMode unset, an input of exactly
// prod(size) elements whose first size is not 1 is one sample and anything else is a batch
// along its first dimension; batchMode = true/false forces either reading. Sizes are
// positive (no -1, unlike View). The output shares storage when the strides allow (a copy
// otherwise); gradInput is gradOutput reshaped as the input. Twin: cudnn::Reshape.
#pragma once

#include <concepts>
#include <optional>

#include "nn/ReshapeBase.h"

namespace nn {

class Reshape : public ReshapeBase {
 public:
  explicit Reshape(Shape size, std::optional<bool> batchMode = std::nullopt);
  template <class... I>
    requires((std::integral<I> && !std::same_as<I, bool>) && ...)
  explicit Reshape(I... sizes) : Reshape(Shape{static_cast<int64_t>(sizes)...}) {}

  static constexpr std::string_view kTypeName = "nn.Reshape";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;  // nn.Reshape(2x3)

  Shape size;
  int64_t nelement = 1;
  std::optional<bool> batchMode;

  Shape outputShape(const Tensor& input) const override;
};

}  // namespace nn
