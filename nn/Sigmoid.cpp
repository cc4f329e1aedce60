// Sigmoid.cpp: all of the computation is in nn::PointwiseBase and kernels::activation_*.
#include "nn/Sigmoid.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr Sigmoid::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  auto m = std::make_shared<Sigmoid>();
  m->inplace = c.flag("inplace", false);
  c.finish();
  return m;
}

}  // namespace nn
