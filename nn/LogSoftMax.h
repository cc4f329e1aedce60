// LogSoftMax.h: y_i = x_i - log sum_j exp(x_j), over the same dimension as
// nn::SoftMax ([n], [batch x n], [C x H x W], [N x C x H x W]). Prints its type name.
// Twin: cudnn::LogSoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class LogSoftMax : public SoftMaxModule<LogSoftMax, SoftMaxBase::Family::Instance, true> {
 public:
  static constexpr std::string_view kTypeName = "nn.LogSoftMax";
};

}  // namespace nn
