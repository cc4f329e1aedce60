// SpatialBatchNormalization.cpp
#include "nn/SpatialBatchNormalization.h"

#include "nn/ModuleConfig.h"

namespace nn {

SpatialBatchNormalization::SpatialBatchNormalization(int64_t nOutput_, double eps_, double momentum_,
                                                     bool affine_)
    : BatchNormalization(nOutput_, eps_, momentum_, affine_, 4) {}

ModulePtr SpatialBatchNormalization::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t nOutput = c.integer("nOutput");
  const double eps = c.number("eps", 1e-5), momentum = c.number("momentum", 0.1);
  const bool affine = c.flag("affine", true), cumulative = c.flag("cumulativeAverage", false);
  c.finish();
  auto m = std::make_shared<SpatialBatchNormalization>(nOutput, eps, momentum, affine);
  m->cumulativeAverage = cumulative;
  return m;
}

}  // namespace nn
