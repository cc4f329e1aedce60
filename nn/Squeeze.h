// Squeeze.h: output = input without its size-1 dimensions, Torch's nn.Squeeze([dim,
// numInputDims]): without `dim` every size-1 dimension goes; with it only that one (0-based, a
// negative one counting from the end), and a dimension of another size stays (Torch's and
// PyTorch's squeeze(dim)). With numInputDims, an input of numInputDims + 1 dims is a batch: a
// non-negative dim moves one on, and squeezing all keeps the batch dimension even when it is 1.
// The output is a view (where the strides allow, a copy otherwise); gradInput is gradOutput viewed as the input. Twin:
// cudnn::Squeeze.
#pragma once

#include <optional>

#include "nn/Module.h"

namespace nn {

class Squeeze : public Module {
 public:
  Squeeze() = default;
  explicit Squeeze(int64_t dim, int64_t numInputDims = 0);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // views only
  static constexpr std::string_view kTypeName = "nn.Squeeze";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.Squeeze, nn.Squeeze(1)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  Squeeze& setNumInputDims(int64_t n);  // Torch's; 0: every input is one sample

  std::optional<int64_t> dim;  // unset: every size-1 dimension
  int64_t numInputDims = 0;

 private:
  Shape outputShape(const Tensor& input, const char* method) const;
};

}  // namespace nn
