// ClippedReLU.cpp
#include "nn/ClippedReLU.h"

#include <cmath>
#include <sstream>

#include "nn/ModuleConfig.h"

namespace nn {

ClippedReLU::ClippedReLU(double ceiling_, bool inplace_) : ActivationModule(inplace_), ceiling(ceiling_) {
  if (!(ceiling > 0) || !std::isfinite(ceiling)) {
    std::ostringstream msg;
    msg << std::string(kTypeName) + ": expected a positive finite ceiling, got " << ceiling;
    throw Error(msg.str());
  }
}

tensor::Json ClippedReLU::config() const { return tensor::Json::Object{{"ceiling", ceiling}, {"inplace", inplace}}; }

ModulePtr ClippedReLU::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const double ceiling = c.number("ceiling");
  const bool inplace = c.flag("inplace", false);
  c.finish();
  return std::make_shared<ClippedReLU>(ceiling, inplace);
}

}  // namespace nn
