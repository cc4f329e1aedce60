// VolumetricSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/VolumetricSoftMax.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr VolumetricSoftMax::fromConfig(const tensor::Json& config) {
  ConfigReader(config, "nn.VolumetricSoftMax").finish();
  return std::make_shared<VolumetricSoftMax>();
}

}  // namespace nn
