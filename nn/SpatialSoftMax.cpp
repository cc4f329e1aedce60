// SpatialSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/SpatialSoftMax.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr SpatialSoftMax::fromConfig(const tensor::Json& config) {
  ConfigReader(config, "nn.SpatialSoftMax").finish();
  return std::make_shared<SpatialSoftMax>();
}

}  // namespace nn
