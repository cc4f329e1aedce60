// View.h: output = input viewed as `size` (one entry may be -1), keeping a leading batch
// dimension when the input holds a whole number of such views, as Torch's nn.View:
// View(4) on [8 x 2 x 2] gives [8 x 4]; with setNumInputDims(n) only the last n input
// dimensions make one sample, so View(-1).setNumInputDims(3) on [N x C x H x W] gives
// [N x C*H*W]. The output shares the input's storage when the strides allow (a copy
// otherwise); gradInput is gradOutput viewed as the input. Twin: cudnn::View.
#pragma once

#include <concepts>
#include <optional>

#include "nn/ReshapeBase.h"

namespace nn {

class View : public ReshapeBase {
 public:
  explicit View(Shape size);
  template <class... I>
    requires((std::integral<I> && !std::same_as<I, bool>) && ...)
  explicit View(I... sizes) : View(Shape{static_cast<int64_t>(sizes)...}) {}

  View& setNumInputDims(int64_t numInputDims);
  static constexpr std::string_view kTypeName = "nn.View";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;  // nn.View(2, -1)

  Shape size;
  int64_t numElements = 1;              // product of the sizes other than -1
  std::optional<int64_t> numInputDims;  // unset: every input dimension may belong to a sample

  Shape outputShape(const Tensor& input) const override;
};

}  // namespace nn
