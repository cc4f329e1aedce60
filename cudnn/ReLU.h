// ReLU.h: the cuDNN twin of nn::ReLU (CUDNN_ACTIVATION_RELU), on cudnn::Pointwise.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16. In place as nn::ReLU(true).
#pragma once

#include "cudnn/Pointwise.h"
#include "nn/ReLU.h"

namespace cudnn {

class ReLU : public Pointwise<nn::ReLU> {
 public:
  using Pointwise::Pointwise;
};

}  // namespace cudnn
