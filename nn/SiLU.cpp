// SiLU.cpp
#include "nn/SiLU.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr SiLU::fromConfig(const tensor::Json& config) {
  ConfigReader(config, kTypeName).finish();
  return std::make_shared<SiLU>();
}

}  // namespace nn
