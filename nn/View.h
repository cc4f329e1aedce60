// View.h: output = input viewed as `size` (one entry may be -1), keeping a leading batch
// dimension when the input holds a whole number of such views, as Torch's nn.View:
// View(4) on [8 x 2 x 2] gives [8 x 4]; with setNumInputDims(n) only the last n input
// dimensions make one sample, so View(-1).setNumInputDims(3) on [N x C x H x W] gives
// [N x C*H*W]. The output shares the input's storage when the strides allow (a copy
// otherwise); gradInput is gradOutput viewed as the input. Twin: cudnn::View.
#pragma once

#include <concepts>
#include <optional>

#include "nn/Module.h"

namespace nn {

class View : public Module {
 public:
  explicit View(Shape size);
  template <class... I>
    requires((std::integral<I> && !std::same_as<I, bool>) && ...)
  explicit View(I... sizes) : View(Shape{static_cast<int64_t>(sizes)...}) {}

  View& setNumInputDims(int64_t numInputDims);
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // views only
  static constexpr std::string_view kTypeName = "nn.View";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;  // nn.View(2, -1)

  Shape size;
  int64_t numElements = 1;               // product of the sizes other than -1
  std::optional<int64_t> numInputDims;   // unset: every input dimension may belong to a sample

  // The shape `input` is viewed as (with the batch dimension when there is one).
  Shape outputShape(const Tensor& input) const;
};

}  // namespace nn
