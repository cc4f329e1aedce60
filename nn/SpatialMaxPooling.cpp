// SpatialMaxPooling.cpp: reading a model file's config; the rest is PoolingBase.h's.
#include "nn/SpatialMaxPooling.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr SpatialMaxPooling::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t kW = c.integer("kW"), kH = c.integer("kH"), dW = c.integer("dW"), dH = c.integer("dH");
  const int64_t padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  auto m = std::make_shared<SpatialMaxPooling>(kW, kH, dW, dH, padW, padH);
  m->ceil_mode = c.flag("ceil_mode", false);
  c.finish();
  return m;
}

}  // namespace nn
