// VolumetricLogSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/VolumetricLogSoftMax.h"

namespace nn {

ModulePtr VolumetricLogSoftMax::fromConfig(const tensor::Json& config) {
  return build<VolumetricLogSoftMax>(config);
}

}  // namespace nn
