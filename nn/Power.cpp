// Power.cpp
#include "nn/Power.h"

#include <cmath>
#include <sstream>

namespace nn {

Power::Power(double p) : pow(p) {
  // a non-finite power cannot be written to a model file (JSON has no Inf)
  if (!std::isfinite(pow)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected a finite pow, got " << pow;
    throw Error(msg.str());
  }
}

tensor::Json Power::config() const { return coefConfig("pow"); }

ModulePtr Power::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const double p = c.number("pow");
  const bool inplace = c.flag("inplace", false);
  c.finish();
  auto m = std::make_shared<Power>(p);
  m->inplace = inplace;
  return m;
}

}  // namespace nn
