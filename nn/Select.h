// Select.h: output = input.select(dimension, index), Torch's nn.Select: one slice along a
// dimension, that dimension removed; a negative dimension or index counts from the end
// (Select(1, -1) on [batch x seqLength x features] takes the last step: a recurrent
// network's last output). The output is a view of the input; gradInput is zero but for the
// selected slice, which holds gradOutput. Twin: cudnn::Select.
#pragma once

#include "nn/Module.h"

namespace nn {

class Select : public Module {
 public:
  Select(int64_t dimension, int64_t index);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // a view and a copy: tensor ops
  static constexpr std::string_view kTypeName = "nn.Select";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.Select(1, -1)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t dimension, index;

 private:
  // {dimension, index} resolved against `input`, checked; throws naming the shapes.
  std::pair<int64_t, int64_t> resolve(const Tensor& input, const char* method) const;
};

}  // namespace nn
