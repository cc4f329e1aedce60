// ReLU.cpp
#include "nn/ReLU.h"

#include "nn/ModuleConfig.h"

namespace nn {

ReLU::ReLU(bool inplace_) : PointwiseBase(inplace_) {}

ModulePtr ReLU::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const bool inplace = c.flag("inplace", false);
  c.finish();
  return std::make_shared<ReLU>(inplace);
}

}  // namespace nn
