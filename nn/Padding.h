// Padding.h: Torch's nn.Padding(dim, pad [, nInputDim, value, index]): |pad| elements of
// `value` added along dimension `dim` (0-based; negative counts from the end), after the input
// for pad > 0 and before it for pad < 0. With nInputDim, an input of more dims is a batch and
// a non-negative dim moves one on. With index, the padding goes `index` input elements in from
// that end (Torch's offset: the input's first `index` elements stay before a prepended padding,
// its last `index` after an appended one). A fill and copies: any dtype, any device.
// gradInput is gradOutput without the padding. Twin: cudnn::Padding.
#pragma once

#include "nn/Module.h"

namespace nn {

class Padding : public Module {
 public:
  Padding(int64_t dim, int64_t pad, int64_t nInputDim = 0, double value = 0, int64_t index = 0);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // a fill and copies: tensor ops
  static constexpr std::string_view kTypeName = "nn.Padding";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.Padding(1, -2), nn.Padding(1, 2, value 0.5)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t dim, pad, nInputDim;
  double value;
  int64_t index;

 private:
  struct Layout {
    int64_t dim, before, size, split;  // split: input elements before the padding
  };
  Layout resolve(const Tensor& input, const char* method) const;
};

}  // namespace nn
