// VolumetricSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/VolumetricSoftMax.h"

namespace nn {

ModulePtr VolumetricSoftMax::fromConfig(const tensor::Json& config) {
  return build<VolumetricSoftMax>(config);
}

}  // namespace nn
