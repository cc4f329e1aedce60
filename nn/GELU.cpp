// GELU.cpp
#include "nn/GELU.h"

#include "nn/ModuleConfig.h"

namespace nn {

GELU::GELU(std::string approximate_) : approximate(std::move(approximate_)) {
  if (approximate != "none" && approximate != "tanh") {
    throw Error(std::string(kTypeName) + ": expected approximate 'none' or 'tanh', got '" + approximate + "'");
  }
}

std::string GELU::str() const { return type_name() + (tanh() ? "(approximate='tanh')" : ""); }

tensor::Json GELU::config() const { return tensor::Json::Object{{"approximate", approximate}}; }

ModulePtr GELU::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const std::string approximate = c.string("approximate", "none");
  c.finish();
  return std::make_shared<GELU>(approximate);
}

}  // namespace nn
