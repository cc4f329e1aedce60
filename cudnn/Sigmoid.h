// Sigmoid.h: the cuDNN twin of nn::Sigmoid (CUDNN_ACTIVATION_SIGMOID), on cudnn::Pointwise.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16.
#pragma once

#include "cudnn/Pointwise.h"
#include "nn/Sigmoid.h"

namespace cudnn {

class Sigmoid : public Pointwise<nn::Sigmoid> {
 public:
  using Pointwise::Pointwise;
};

}  // namespace cudnn
