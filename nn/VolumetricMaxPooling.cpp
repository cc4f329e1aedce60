// VolumetricMaxPooling.cpp: reading a model file's config; the rest is PoolingBase.h's.
#include "nn/VolumetricMaxPooling.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr VolumetricMaxPooling::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t kT = c.integer("kT"), kW = c.integer("kW"), kH = c.integer("kH");
  const int64_t dT = c.integer("dT"), dW = c.integer("dW"), dH = c.integer("dH");
  const int64_t padT = c.integer("padT", 0), padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  auto m = std::make_shared<VolumetricMaxPooling>(kT, kW, kH, dT, dW, dH, padT, padW, padH);
  m->ceil_mode = c.flag("ceil_mode", false);
  c.finish();
  return m;
}

}  // namespace nn
