// Container.cpp
#include "nn/Container.h"

namespace nn {

Container& Container::add(ModulePtr module) {
  if (!module) throw Error(where("add") + "expected a module, got nullptr");
  if (!gradInputNeeded() && childSeesInput(modules.size())) module->setGradInputNeeded(false);
  modules.push_back(std::move(module));
  return *this;
}

void Container::setGradInputNeeded(bool needed) {
  Module::setGradInputNeeded(needed);
  for (size_t i = 0; i < modules.size(); ++i) {
    if (childSeesInput(i)) child_at(*this, modules, i, "setGradInputNeeded").setGradInputNeeded(needed);
  }
}

ModulePtr Container::get(size_t index) const {
  if (index >= modules.size()) {
    throw Error(where("get") + "index " + std::to_string(index) + " out of range for " +
                std::to_string(modules.size()) + " modules");
  }
  return modules[index];
}

}  // namespace nn
