// Tanh.cpp: all of the computation is in nn::PointwiseBase and kernels::activation_*.
#include "nn/Tanh.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr Tanh::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  auto m = std::make_shared<Tanh>();
  m->inplace = c.flag("inplace", false);
  c.finish();
  return m;
}

}  // namespace nn
