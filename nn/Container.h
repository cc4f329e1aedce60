// Container.h: the base of modules made of modules (Sequential, Concat, Residual).
// Children are shared pointers in `modules`, the slots convert() replaces in place.
// A child's error is rethrown prefixed with its position, as Torch does:
// "In 3 module of nn.Sequential: nn.Linear::updateOutput: ...".
#pragma once

#include <utility>

#include "nn/Module.h"

namespace nn {

class Container : public Module {
 public:
  Container& add(ModulePtr module);
  ModulePtr get(size_t index) const;  // 0-based; throws when out of range
  size_t size() const { return modules.size(); }
  std::vector<ModulePtr>* children() override { return &modules; }
  // Children bridge devices themselves, so a container runs on whatever its input is on.
  bool computesOn(Device) const override { return true; }
  bool writesGradOutput() const override { return true; }  // a child might
  // Passes the switch to the children that see the container's input (childSeesInput), now
  // and as add() brings them.
  void setGradInputNeeded(bool needed) override;
  void setFreeIntermediateGradients(bool on) override;
  // Its own output and every child's forward state (Module::releaseActivations).
  void releaseActivations() override;

  std::vector<ModulePtr> modules;

 protected:
  Container() = default;
  // Under setFreeIntermediateGradients: releases every child's gradInput (Note [Freeing
  // intermediate gradients] in Container.cpp); for containers that have summed them.
  void releaseChildGradInputs();
  Container(Container&&) = default;
  // Whether child i is handed the container's input: all of them here (Concat, Residual, the
  // spatial transformer's localisation network), the first alone in a Sequential.
  virtual bool childSeesInput(size_t) const { return true; }

  template <class F>
  decltype(auto) rethrowErrors(size_t index, F&& f) const {
    try {
      return f();
    } catch (const Error& e) {
      throw Error("In " + std::to_string(index + 1) + " module of " + type_name() + ": " + e.what());
    }
  }
};

}  // namespace nn
