// LeakyReLU.cpp
#include "nn/LeakyReLU.h"

#include <cmath>
#include <sstream>

namespace nn {

LeakyReLU::LeakyReLU(double negativeSlope_, bool inplace_) : ActivationModule(inplace_), negativeSlope(negativeSlope_) {
  if (!std::isfinite(negativeSlope) || (inplace && negativeSlope < 0)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected a finite negative_slope (>= 0 in place), got " << negativeSlope
        << (inplace ? " in place" : "");
    throw Error(msg.str());
  }
}

std::string LeakyReLU::str() const {
  std::ostringstream s;
  s << type_name() << "(" << negativeSlope << (inplace ? ", inplace" : "") << ")";
  return s.str();
}

tensor::Json LeakyReLU::config() const { return coefConfig("negative_slope"); }

ModulePtr LeakyReLU::fromConfig(const tensor::Json& config) { return coefFromConfig(config, "negative_slope", 0.01); }

}  // namespace nn
