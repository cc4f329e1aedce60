// SpatialAveragePooling.cpp: reading a model file's config; the rest is PoolingBase.h's.
#include "nn/SpatialAveragePooling.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr SpatialAveragePooling::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t kW = c.integer("kW"), kH = c.integer("kH"), dW = c.integer("dW", 1), dH = c.integer("dH", 1);
  const int64_t padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  auto m = std::make_shared<SpatialAveragePooling>(kW, kH, dW, dH, padW, padH);
  m->ceil_mode = c.flag("ceil_mode", false);
  m->count_include_pad = c.flag("count_include_pad", true);
  c.finish();
  return m;
}

}  // namespace nn
