// Unsqueeze.h: output = input with a size-1 dimension inserted so that it sits at `pos` of the
// output, Torch's nn.Unsqueeze(pos [, numInputDims]) (0-based; a negative pos counts from the
// output's end, PyTorch's unsqueeze(-1) appending). With numInputDims, an input of
// numInputDims + 1 dims is a batch and a non-negative pos moves one on. The output is a view (where the strides allow,
// a copy otherwise); gradInput is gradOutput viewed as the input. Twin: cudnn::Unsqueeze.
#pragma once

#include "nn/Module.h"

namespace nn {

class Unsqueeze : public Module {
 public:
  explicit Unsqueeze(int64_t pos, int64_t numInputDims = 0);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // views only
  static constexpr std::string_view kTypeName = "nn.Unsqueeze";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.Unsqueeze(1)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  Unsqueeze& setNumInputDims(int64_t n);  // Torch's; 0: every input is one sample

  int64_t pos;
  int64_t numInputDims = 0;

 private:
  Shape outputShape(const Tensor& input, const char* method) const;
};

}  // namespace nn
