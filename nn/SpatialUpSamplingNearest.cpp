// SpatialUpSamplingNearest.cpp
#include "nn/SpatialUpSamplingNearest.h"

#include "nn/ModuleConfig.h"

namespace nn {

SpatialUpSamplingNearest::SpatialUpSamplingNearest(int64_t scale) : scale_factor(scale) {
  if (scale < 1) throw Error(std::string(kTypeName) + ": expected scale >= 1, got " + std::to_string(scale));
}

std::pair<int64_t, int64_t> SpatialUpSamplingNearest::outputSize(int64_t height, int64_t width) const {
  if (scale_factor < 1) throw Error(where("updateOutput") + "expected scale >= 1, got " + std::to_string(scale_factor));
  return {height * scale_factor, width * scale_factor};
}

std::string SpatialUpSamplingNearest::str() const { return type_name() + "(" + std::to_string(scale_factor) + ")"; }

tensor::Json SpatialUpSamplingNearest::config() const { return tensor::Json::Object{{"scale", scale_factor}}; }

ModulePtr SpatialUpSamplingNearest::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t scale = c.integer("scale");
  c.finish();
  return std::make_shared<SpatialUpSamplingNearest>(scale);
}

}  // namespace nn
