// LogSoftMax.h: y_i = x_i - log sum_j exp(x_j), over the same dimension as
// nn::SoftMax ([n], [batch x n], [C x H x W], [N x C x H x W]). Prints "nn.LogSoftMax".
// Twin: cudnn::LogSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class LogSoftMax : public SoftMaxBase {
 public:
  LogSoftMax() : SoftMaxBase(Family::Instance, true) {}
  std::string type_name() const override { return "nn.LogSoftMax"; }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
