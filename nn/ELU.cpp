// ELU.cpp
#include "nn/ELU.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "nn/ModuleConfig.h"

namespace nn {

ELU::ELU(double alpha_, bool inplace_) : ActivationModule(inplace_), alpha(alpha_) {
  // a non-finite alpha computes nothing useful and cannot be written to a model file
  if (!std::isfinite(alpha)) {
    std::ostringstream msg;
    msg << std::string(kTypeName) + ": expected a finite alpha, got " << alpha;
    throw Error(msg.str());
  }
}

std::string ELU::str() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, " (alpha:%f)", alpha);
  return type_name() + buf;
}

tensor::Json ELU::config() const { return tensor::Json::Object{{"alpha", alpha}, {"inplace", inplace}}; }

ModulePtr ELU::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const double alpha = c.number("alpha", 1.0);
  const bool inplace = c.flag("inplace", false);
  c.finish();
  return std::make_shared<ELU>(alpha, inplace);
}

}  // namespace nn
