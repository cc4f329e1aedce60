// SoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/SoftMax.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr SoftMax::fromConfig(const tensor::Json& config) {
  ConfigReader(config, "nn.SoftMax").finish();
  return std::make_shared<SoftMax>();
}

}  // namespace nn
