// Residual.h: out = block(x) + shortcut(x), the shortcut being the identity when none is
// given (He et al.'s ResNet unit; e.g. block = Sequential(conv, bn, relu, conv, bn),
// shortcut = Sequential(conv 1x1 stride 2, bn)). Both outputs must have the same shape;
// gradInput is the sum of the two paths' gradInputs. Children: modules[0] = block,
// modules[1] = shortcut when given. Prints as
//   nn.Residual {
//     block: nn.Linear(4 -> 4)
//     shortcut: identity
//   }
// Twin: cudnn::Residual (the same tensor ops on the GPU).
#pragma once

#include "nn/Container.h"

namespace nn {

class Residual : public Container {
 public:
  explicit Residual(ModulePtr block, ModulePtr shortcut = nullptr);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "nn.Residual";
  std::string type_name() const override { return std::string(kTypeName); }
  // children: as config() leaves them out, in order (model files store them apart)
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;

  ModulePtr block() const { return modules.at(0); }
  ModulePtr shortcut() const { return modules.size() > 1 ? modules[1] : nullptr; }  // nullptr: identity

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  void checkModules(const char* method) const;

 private:
  template <class Step>
  void backwardPass(const Tensor& input, const Tensor& gradOutput, bool wantGradInput, Step step);
};

}  // namespace nn
