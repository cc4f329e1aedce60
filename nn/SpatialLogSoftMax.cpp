// SpatialLogSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/SpatialLogSoftMax.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr SpatialLogSoftMax::fromConfig(const tensor::Json& config) {
  ConfigReader(config, "nn.SpatialLogSoftMax").finish();
  return std::make_shared<SpatialLogSoftMax>();
}

}  // namespace nn
