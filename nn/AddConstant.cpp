// AddConstant.cpp
#include "nn/AddConstant.h"

#include <cmath>
#include <sstream>

namespace nn {

AddConstant::AddConstant(double constant_, bool inplace_) : ActivationModule(inplace_), constant(constant_) {
  // a non-finite constant cannot be written to a model file (JSON has no Inf)
  if (!std::isfinite(constant)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected a finite constant, got " << constant;
    throw Error(msg.str());
  }
}

tensor::Json AddConstant::config() const { return coefConfig("constant"); }

ModulePtr AddConstant::fromConfig(const tensor::Json& config) {
  return coefFromConfig(config, "constant", std::nullopt);
}

}  // namespace nn
