// SpatialLogSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/SpatialLogSoftMax.h"

namespace nn {

ModulePtr SpatialLogSoftMax::fromConfig(const tensor::Json& config) {
  return build<SpatialLogSoftMax>(config);
}

}  // namespace nn
