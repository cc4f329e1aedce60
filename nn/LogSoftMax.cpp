// LogSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/LogSoftMax.h"

namespace nn {

ModulePtr LogSoftMax::fromConfig(const tensor::Json& config) {
  return build<LogSoftMax>(config);
}

}  // namespace nn
