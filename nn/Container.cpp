// Container.cpp
#include "nn/Container.h"

namespace nn {

Container& Container::add(ModulePtr module) {
  if (!module) throw Error(where("add") + "expected a module, got nullptr");
  if (!gradInputNeeded() && childSeesInput(modules.size())) module->setGradInputNeeded(false);
  if (freesIntermediateGradients()) module->setFreeIntermediateGradients(true);
  modules.push_back(std::move(module));
  return *this;
}

void Container::setGradInputNeeded(bool needed) {
  Module::setGradInputNeeded(needed);
  for (size_t i = 0; i < modules.size(); ++i) {
    if (childSeesInput(i)) child_at(*this, modules, i, "setGradInputNeeded").setGradInputNeeded(needed);
  }
}

// Note [Freeing intermediate gradients]
// Torch keeps every module's gradInput after backward(); a container holds its children's as
// their gradOutputs too. For a deep network that is a second copy of every activation, alive
// at the end of backward: ResNet-50's step peaked at about twice PyTorch's memory. With
// setFreeIntermediateGradients(true) the backward() path of Sequential releases child i+1's
// gradInput (and its own reference) once child i has consumed it, and Residual and Concat
// release their children's once summed into their own; what the buffers held then goes back
// to the caching allocator for the next layer's gradients. updateGradInput() keeps them all:
// accGradParameters() still follows it, as Torch's contract says.
void Container::setFreeIntermediateGradients(bool on) {
  Module::setFreeIntermediateGradients(on);
  for (size_t i = 0; i < modules.size(); ++i) {
    child_at(*this, modules, i, "setFreeIntermediateGradients").setFreeIntermediateGradients(on);
  }
}

void Container::releaseChildGradInputs() {
  if (!freesIntermediateGradients()) return;
  for (size_t i = 0; i < modules.size(); ++i) child_at(*this, modules, i, "releaseGradInput").releaseGradInput();
}

void Container::releaseActivations() {
  Module::releaseActivations();
  for (size_t i = 0; i < modules.size(); ++i) child_at(*this, modules, i, "releaseActivations").releaseActivations();
}

ModulePtr Container::get(size_t index) const {
  if (index >= modules.size()) {
    throw Error(where("get") + "index " + std::to_string(index) + " out of range for " +
                std::to_string(modules.size()) + " modules");
  }
  return modules[index];
}

}  // namespace nn
