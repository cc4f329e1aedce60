// Identity.h: output = input, gradInput = gradOutput (shared, not copied), for a tensor or a
// table (Torch's Identity passes tables through: a graph's input, a ConcatTable branch). Used as
// the default shortcut of Residual. Twin: cudnn::Identity.
#pragma once

#include "nn/Module.h"

namespace nn {

class Identity : public Module {
 public:
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // nothing to compute
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  void accGradParametersValue(const Value&, const Value&, double = 1.0) override {}
  static constexpr std::string_view kTypeName = "nn.Identity";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
