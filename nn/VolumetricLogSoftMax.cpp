// VolumetricLogSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/VolumetricLogSoftMax.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr VolumetricLogSoftMax::fromConfig(const tensor::Json& config) {
  ConfigReader(config, "nn.VolumetricLogSoftMax").finish();
  return std::make_shared<VolumetricLogSoftMax>();
}

}  // namespace nn
