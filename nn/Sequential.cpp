// Sequential.cpp
#include "nn/Sequential.h"

#include "nn/ModuleConfig.h"

namespace nn {

Sequential::Sequential(std::initializer_list<ModulePtr> children) {
  for (const auto& c : children) add(c);
}

const Tensor& Sequential::updateOutput(const Tensor& input) {
  if (usesTables()) {
    output = updateOutputValue(input).tensor(where("updateOutput"), "the output");
    return output;
  }
  output = forwardFirst(input, modules.size());
  return output;
}

bool Sequential::addsInForward() const {
  return !modules.empty() && modules.back() && modules.back()->addsInForward() && !usesTables();
}

const Tensor& Sequential::updateOutputAdding(const Tensor& input, const Tensor& addend) {
  if (!addsInForward()) return Module::updateOutputAdding(input, addend);  // throws
  const size_t last = modules.size() - 1;
  const Tensor current = forwardFirst(input, last);
  output = rethrowErrors(last, [&]() -> Tensor {
    Module& m = child_at(*this, modules, last, "forwardAdding");
    if (m.takesAddend(current)) return m.forwardAdding(current, addend);
    // the last child bridges devices (nn on a CUDA input): its output, then the sum, apart from it
    const Tensor& y = m.forward(current);
    check_addend(where("forwardAdding"), addend, y.sizes(), y);
    return y.add(addend);
  });
  return output;
}

bool Sequential::usesTables() const {
  for (const auto& m : modules) {
    if (m && m->usesTables()) return true;
  }
  return false;
}

const Value& Sequential::updateOutputValue(const Value& input) {
  valueInputs_.resize(modules.size());
  const Value* current = &input;
  for (size_t i = 0; i < modules.size(); ++i) {
    valueInputs_[i] = *current;
    current = &rethrowErrors(
        i, [&]() -> const Value& { return child_at(*this, modules, i, "forward").forward(valueInputs_[i]); });
  }
  outputValue = *current;
  return outputValue;
}

template <class Step>
void Sequential::backwardValuePass(const Value& input, const Value& gradOutput, Step step, bool release) {
  if (valueInputs_.size() != modules.size()) {
    throw Error(where("backward") + "expected a forward() first with the current " + std::to_string(modules.size()) +
                " modules");
  }
  valueGradOutputs_.resize(modules.size());
  Value grad = gradOutput;
  for (size_t i = modules.size(); i-- > 0;) {
    const Value& in = i == 0 ? input : valueInputs_[i];
    valueGradOutputs_[i] = grad;
    grad = rethrowErrors(i, [&]() -> const Value& { return step(child_at(*this, modules, i, "backward"), in, grad); });
    if (release && i + 1 < modules.size()) {  // Note [Freeing intermediate gradients] in Container.cpp
      valueGradOutputs_[i] = Value();
      child_at(*this, modules, i + 1, "backward").releaseGradInput();
    }
  }
  gradInputValue = std::move(grad);
  gradInput = gradInputValue.tensorOrUndefined();
}

const Value& Sequential::updateGradInputValue(const Value& input, const Value& gradOutput) {
  backwardValuePass(
      input, gradOutput,
      [](Module& m, const Value& in, const Value& g) -> const Value& { return m.updateGradInputValue(in, g); }, false);
  return gradInputValue;
}

void Sequential::accGradParametersValue(const Value& input, const Value& gradOutput, double scale) {
  if (valueGradOutputs_.size() != modules.size())
    throw Error(where("accGradParameters") + "expected updateGradInput() first");
  if (modules.empty()) return;
  valueGradOutputs_.back() = gradOutput;
  for (size_t i = modules.size(); i-- > 0;) {
    const Value& in = i == 0 ? input : valueInputs_[i];
    rethrowErrors(i, [&] {
      child_at(*this, modules, i, "accGradParameters").accGradParametersValue(in, valueGradOutputs_[i], scale);
    });
  }
}

void Sequential::backwardValueImpl(const Value& input, const Value& gradOutput, double scale) {
  backwardValuePass(
      input, gradOutput,
      [scale](Module& m, const Value& in, const Value& g) -> const Value& { return m.backward(in, g, scale); },
      freesIntermediateGradients());
}

void Sequential::checkFirst(size_t n, const char* method) const {
  if (n > modules.size()) {
    throw Error(where(method) + "expected at most " + std::to_string(modules.size()) + " children, got " +
                std::to_string(n));
  }
}

// Note [Activations in the epilogue]
// In a decode step a Linear's product over its few rows and the activation after it (GPT-2's
// mlp: Linear, GELU, Linear) are two launches of a few microseconds each, for work one launch's
// epilogue does. forwardFirst offers each child the next one (Module::forwardThrough); a child
// that takes it writes its own output and the next child's, as their two forwards would have, so
// inputs_ and both modules' state are what backward expects. Only the tensor path does this, in
// order, and the children stay what they are: str(), state and model files see no difference.
Tensor Sequential::forwardFirst(const Tensor& input, size_t n) {
  checkFirst(n, "forwardFirst");
  inputs_.resize(modules.size());
  Tensor current = input;
  for (size_t i = 0; i < n; ++i) {
    inputs_[i] = current;
    Module& child = child_at(*this, modules, i, "forward");
    // Note [Activations in the epilogue]
    if (i + 1 < n && modules[i + 1] &&
        rethrowErrors(i, [&] { return child.forwardThrough(current, *modules[i + 1]); })) {
      inputs_[i + 1] = child.output;
      current = modules[++i]->output;
      continue;
    }
    current = rethrowErrors(i, [&]() -> const Tensor& { return child.forward(current); });
  }
  if (n < modules.size()) inputs_[n] = current;
  return current;
}

// Children n-1 down to 0; gradOutput is child n-1's output gradient.
template <class Step>
void Sequential::backwardPass(const Tensor& input, const Tensor& gradOutput, Step step, bool release, size_t n) {
  checkFirst(n, "backward");
  if (inputs_.size() != modules.size()) {
    throw Error(where("backward") + "expected a forward() first with the current " + std::to_string(modules.size()) +
                " modules");
  }
  gradOutputs_.resize(modules.size());
  Tensor grad = gradOutput;
  for (size_t i = n; i-- > 0;) {
    const Tensor& in = i == 0 ? input : inputs_[i];
    gradOutputs_[i] = grad;
    grad = rethrowErrors(i, [&]() { return step(child_at(*this, modules, i, "backward"), in, grad); });
    if (release && i + 1 < modules.size()) {  // Note [Freeing intermediate gradients] in Container.cpp
      gradOutputs_[i] = Tensor();
      child_at(*this, modules, i + 1, "backward").releaseGradInput();
    }
  }
  gradInput = grad;
}

void Sequential::releaseGradInput() {
  Module::releaseGradInput();
  // gradInput was the first child's
  if (!modules.empty()) child_at(*this, modules, 0, "releaseGradInput").releaseGradInput();
  for (auto& g : gradOutputs_) g = Tensor();
  for (auto& g : valueGradOutputs_) g = Value();
}

void Sequential::releaseActivations() {
  Container::releaseActivations();
  inputs_.clear();
  valueInputs_.clear();
}

const Tensor& Sequential::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  if (usesTables()) {
    gradInput = updateGradInputValue(input, gradOutput).tensorOrUndefined();
    return gradInput;
  }
  updateGradInputFirst(input, gradOutput, modules.size());
  return gradInput;
}

Tensor Sequential::updateGradInputFirst(const Tensor& input, const Tensor& gradOutput, size_t n) {
  backwardPass(
      input, gradOutput, [](Module& m, const Tensor& in, const Tensor& g) { return m.updateGradInput(in, g); }, false,
      n);
  return gradInput;
}

void Sequential::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (usesTables()) return accGradParametersValue(input, gradOutput, scale);
  accGradParametersFirst(input, gradOutput, modules.size(), scale);
}

void Sequential::accGradParametersFirst(const Tensor& input, const Tensor& gradOutput, size_t n, double scale) {
  // Torch's contract: updateGradInput ran first, leaving each child's gradOutput here.
  checkFirst(n, "accGradParameters");
  if (n == 0) return;
  if (gradOutputs_.size() != modules.size()) {
    throw Error(where("accGradParameters") + "expected updateGradInput() first");
  }
  gradOutputs_[n - 1] = gradOutput;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (!gradOutputs_[i].defined()) {
      throw Error(where("accGradParameters") +
                  "expected updateGradInput() first (backward() freed the intermediate gradients: "
                  "setFreeIntermediateGradients)");
    }
  }
  for (size_t i = n; i-- > 0;) {
    const Tensor& in = i == 0 ? input : inputs_[i];
    rethrowErrors(
        i, [&]() { child_at(*this, modules, i, "accGradParameters").accGradParameters(in, gradOutputs_[i], scale); });
  }
}

void Sequential::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  if (usesTables()) {
    backwardValueImpl(input, gradOutput, scale);
    return;
  }
  backwardFirst(input, gradOutput, modules.size(), scale);
}

Tensor Sequential::backwardFirst(const Tensor& input, const Tensor& gradOutput, size_t n, double scale) {
  backwardPass(
      input, gradOutput, [scale](Module& m, const Tensor& in, const Tensor& g) { return m.backward(in, g, scale); },
      freesIntermediateGradients(), n);
  return gradInput;
}

std::string Sequential::str() const {
  std::string s = type_name() + " {\n  [input";
  for (size_t i = 0; i < modules.size(); ++i) s += " -> (" + std::to_string(i + 1) + ")";
  s += " -> output]";
  for (size_t i = 0; i < modules.size(); ++i) {
    s += "\n  (" + std::to_string(i + 1) + "): " + indent_lines(child_at(*this, modules, i, "str").str(), "  ");
  }
  return s + "\n}";
}

ModulePtr Sequential::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader(config, kTypeName).finish();
  auto m = std::make_shared<Sequential>();
  for (auto& child : children) m->add(std::move(child));
  return m;
}

}  // namespace nn
