// ELU.cpp
#include "nn/ELU.h"

#include <cmath>
#include <cstdio>
#include <sstream>

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

tensor::Json ELU::config() const { return coefConfig("alpha"); }

ModulePtr ELU::fromConfig(const tensor::Json& config) { return coefFromConfig(config, "alpha", 1.0); }

}  // namespace nn
