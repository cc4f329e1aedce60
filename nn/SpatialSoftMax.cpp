// SpatialSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/SpatialSoftMax.h"

namespace nn {

ModulePtr SpatialSoftMax::fromConfig(const tensor::Json& config) {
  return build<SpatialSoftMax>(config);
}

}  // namespace nn
