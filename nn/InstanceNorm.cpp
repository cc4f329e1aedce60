// InstanceNorm.cpp: the configuration; the compute is GroupNormBase's.
#include "nn/InstanceNorm.h"

#include <sstream>

#include "nn/ModuleConfig.h"

namespace nn {

InstanceNorm::InstanceNorm(int64_t numFeatures, double eps_, double momentum_, bool affine_, bool trackRunningStats_)
    : GroupNormBase(kTypeName, numFeatures, numFeatures, eps_, momentum_, affine_, trackRunningStats_, 3) {
  if (trackRunningStats_) num_batches_tracked = tensor::scalar_tensor(0, DType::Int64);
}

void InstanceNorm::visitState(StateVisitor& v) {
  GroupNormBase::visitState(v);
  if (num_batches_tracked.defined()) v.buffer("num_batches_tracked", num_batches_tracked);
}

std::string InstanceNorm::str() const {
  std::ostringstream s;
  s << type_name() << "(" << numChannels << ", eps=" << eps << ", momentum=" << momentum
    << (affine() ? ", affine=true" : "") << (trackRunningStats() ? ", track_running_stats=true" : "") << ")";
  return s.str();
}

tensor::Json InstanceNorm::config() const {
  return tensor::Json::Object{{"num_features", numChannels},
                              {"eps", eps},
                              {"momentum", momentum},
                              {"affine", affine()},
                              {"track_running_stats", trackRunningStats()}};
}

ModulePtr InstanceNorm::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t features = c.integer("num_features");
  const double eps = c.number("eps", 1e-5), momentum = c.number("momentum", 0.1);
  const bool affine = c.flag("affine", false), track = c.flag("track_running_stats", false);
  c.finish();
  return std::make_shared<InstanceNorm>(features, eps, momentum, affine, track);
}

}  // namespace nn
