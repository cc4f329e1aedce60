// Contiguous.h: Torch's nn.Contiguous with PyTorch's memory formats: output = the input laid
// out densely in `format` (the input itself where it already is, else one copy); gradInput =
// gradOutput laid out as the input was (suggest_memory_format), so the gradient has the layout
// of what it is the gradient of. Values never change. ChannelsLast is NHWC for 4-d and NDHWC
// for 5-d tensors and refuses other ranks; Contiguous (row-major) takes any rank. Like Identity
// it moves elements without computing, so it takes every dtype and computes on any device.
// cudnn::autotune puts one at each end of a network it makes channels-last (cudnn/Autotune.h).
// Prints as "nn.Contiguous" ("nn.Contiguous(channels_last)"). Twin: cudnn::Contiguous.
#pragma once

#include "nn/Module.h"

namespace nn {

class Contiguous : public Module {
 public:
  explicit Contiguous(tensor::MemoryFormat format = tensor::MemoryFormat::Contiguous);
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // copies run on the tensors' device
  tensor::MemoryFormat format() const { return format_; }
  static constexpr std::string_view kTypeName = "nn.Contiguous";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;  // {"memoryFormat": "contiguous" | "channels_last"}
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

 private:
  tensor::MemoryFormat format_;
};

}  // namespace nn
