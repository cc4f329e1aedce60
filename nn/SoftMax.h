// SoftMax.h: y_i = exp(x_i) / sum_j exp(x_j), as Torch's nn.SoftMax: over the
// vector for [n], over n for each row of [batch x n], and over the feature maps at each
// location for [C x H x W] and [N x C x H x W]. Prints its type name.
// Twin: cudnn::SoftMax (cudnnSoftmaxForward in CHANNEL mode over layout()).
#pragma once

#include "nn/SoftMaxBase.h"

namespace nn {

class SoftMax : public SoftMaxModule<SoftMax, SoftMaxBase::Family::Instance, false> {
 public:
  static constexpr std::string_view kTypeName = "nn.SoftMax";
};

}  // namespace nn
