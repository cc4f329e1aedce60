// SoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/SoftMax.h"

namespace nn {

ModulePtr SoftMax::fromConfig(const tensor::Json& config) {
  return build<SoftMax>(config);
}

}  // namespace nn
