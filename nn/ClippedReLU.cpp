// ClippedReLU.cpp
#include "nn/ClippedReLU.h"

#include <cmath>
#include <sstream>

namespace nn {

ClippedReLU::ClippedReLU(double ceiling_, bool inplace_) : ActivationModule(inplace_), ceiling(ceiling_) {
  if (!(ceiling > 0) || !std::isfinite(ceiling)) {
    std::ostringstream msg;
    msg << std::string(kTypeName) + ": expected a positive finite ceiling, got " << ceiling;
    throw Error(msg.str());
  }
}

tensor::Json ClippedReLU::config() const { return coefConfig("ceiling"); }

ModulePtr ClippedReLU::fromConfig(const tensor::Json& config) {
  return coefFromConfig(config, "ceiling", std::nullopt);
}

}  // namespace nn
