// GroupNorm.cpp: the configuration; the compute is GroupNormBase's.
#include "nn/GroupNorm.h"

#include <sstream>

#include "nn/ModuleConfig.h"

namespace nn {

GroupNorm::GroupNorm(int64_t numGroups_, int64_t numChannels_, double eps_, bool affine_)
    : GroupNormBase(kTypeName, numGroups_, numChannels_, eps_, 0.1, affine_, false, 2), numGroups(numGroups_) {}

std::string GroupNorm::str() const {
  std::ostringstream s;
  s << type_name() << "(" << numGroups << ", " << numChannels << ", eps=" << eps << (affine() ? "" : ", affine=false")
    << ")";
  return s.str();
}

tensor::Json GroupNorm::config() const {
  return tensor::Json::Object{
      {"num_groups", numGroups}, {"num_channels", numChannels}, {"eps", eps}, {"affine", affine()}};
}

ModulePtr GroupNorm::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t groups = c.integer("num_groups"), channels = c.integer("num_channels");
  const double eps = c.number("eps", 1e-5);
  const bool affine = c.flag("affine", true);
  c.finish();
  return std::make_shared<GroupNorm>(groups, channels, eps, affine);
}

}  // namespace nn
