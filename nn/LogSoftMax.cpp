// LogSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/LogSoftMax.h"

#include "nn/ModuleConfig.h"

namespace nn {

ModulePtr LogSoftMax::fromConfig(const tensor::Json& config) {
  ConfigReader(config, "nn.LogSoftMax").finish();
  return std::make_shared<LogSoftMax>();
}

}  // namespace nn
