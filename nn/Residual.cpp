// Residual.cpp: sums through tensor ops, so the container works on whatever device its
// children's outputs live on. The sums keep the block's layout (a channels-last block output
// gives a channels-last output and gradInput: Note [Memory formats] in tensor/Tensor.h).
#include "nn/Residual.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

Residual::Residual(ModulePtr block, ModulePtr shortcut) {
  if (!block) throw Error(std::string(kTypeName) + ": expected a block module, got nullptr");
  add(std::move(block));
  if (shortcut) add(std::move(shortcut));
}

void Residual::checkModules(const char* method) const {
  if (modules.empty() || modules.size() > 2) {
    throw Error(where(method) + "expected a block and an optional shortcut (1 or 2 modules), got " +
                std::to_string(modules.size()) + " modules");
  }
  for (size_t i = 0; i < modules.size(); ++i) child_at(*this, modules, i, method);
}

const Tensor& Residual::updateOutput(const Tensor& input) {
  checkModules("updateOutput");
  const Tensor& y = rethrowErrors(0, [&]() -> const Tensor& { return modules[0]->forward(input); });
  const Tensor& s =
      modules.size() > 1 ? rethrowErrors(1, [&]() -> const Tensor& { return modules[1]->forward(input); }) : input;
  if (y.sizes() != s.sizes()) {
    throw Error(where("updateOutput") + "expected block and " +
                (modules.size() > 1 ? "shortcut" : "identity shortcut (the input)") +
                " outputs of the same shape, got " + tensor::shape_str(y.sizes()) + " and " +
                tensor::shape_str(s.sizes()));
  }
  tensor::add_out(ensure(output, y.sizes(), y, tensor::suggest_memory_format(y)), y, s);
  return output;
}

template <class Step>
void Residual::backwardPass(const Tensor& input, const Tensor& gradOutput, bool wantGradInput, Step step) {
  checkModules("backward");
  // The identity path adds gradOutput in place, which would broadcast a smaller one; its
  // output has the input's shape (a shortcut module checks gradOutput itself).
  if (modules.size() == 1) check_grad_output_shape(where("backward"), input.sizes(), gradOutput);
  const Tensor& gb = rethrowErrors(0, [&]() -> const Tensor& { return step(*modules[0], input, gradOutput); });
  if (!wantGradInput) {  // Note [gradInput not needed] in Module.cpp
    if (modules.size() > 1) rethrowErrors(1, [&]() { step(*modules[1], input, gradOutput); });
    gradInput = Tensor();
    return;
  }
  // gb is the block's own gradInput, which the shortcut's step leaves alone
  const Tensor& other = modules.size() > 1
                            ? rethrowErrors(1, [&]() -> const Tensor& { return step(*modules[1], input, gradOutput); })
                            : gradOutput;
  tensor::add_out(ensure(gradInput, gb.sizes(), gb, tensor::suggest_memory_format(gb)), gb, other);
}

const Tensor& Residual::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  backwardPass(input, gradOutput, true,
               [](Module& m, const Tensor& x, const Tensor& g) -> const Tensor& { return m.updateGradInput(x, g); });
  return gradInput;
}

void Residual::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  checkModules("accGradParameters");
  for (size_t i = 0; i < modules.size(); ++i) {
    rethrowErrors(i, [&]() { modules[i]->accGradParameters(input, gradOutput, scale); });
  }
}

void Residual::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(
      input, gradOutput, gradInputNeeded(),
      [scale](Module& m, const Tensor& x, const Tensor& g) -> const Tensor& { return m.backward(x, g, scale); });
  releaseChildGradInputs();  // summed into gradInput now
}

std::string Residual::str() const {
  std::string s = type_name() + " {";
  if (!modules.empty()) s += "\n  block: " + indent_lines(child_at(*this, modules, 0, "str").str(), "  ");
  s += "\n  shortcut: " +
       (modules.size() > 1 ? indent_lines(child_at(*this, modules, 1, "str").str(), "  ") : std::string("identity"));
  return s + "\n}";
}

ModulePtr Residual::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader(config, kTypeName).finish();
  if (children.empty() || children.size() > 2) {
    throw Error(std::string(kTypeName) + ": expected a block and an optional shortcut (1 or 2 children), got " +
                std::to_string(children.size()));
  }
  return std::make_shared<Residual>(children[0], children.size() > 1 ? children[1] : nullptr);
}

}  // namespace nn
