// ModuleWrapper.cpp
#include "nn/ModuleWrapper.h"

#include "nn/Module.h"

namespace nn {

Module& unwrapped(Module& m) {
  Module* at = &m;
  while (auto* w = dynamic_cast<ModuleWrapper*>(at)) at = &w->wrapped();
  return *at;
}

const Module& unwrapped(const Module& m) { return unwrapped(const_cast<Module&>(m)); }

}  // namespace nn
