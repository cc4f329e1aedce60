// Sum.cpp
#include "nn/Sum.h"

namespace nn {

tensor::Json Sum::config() const {
  return tensor::Json::Object{{"dimension", dimension}, {"sizeAverage", sizeAverage}};
}

ModulePtr Sum::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t dimension = c.integer("dimension");
  const bool sizeAverage = c.flag("sizeAverage", false);
  c.finish();
  return std::make_shared<Sum>(dimension, sizeAverage);
}

}  // namespace nn
