// Tanh.h: the cuDNN twin of nn::Tanh (CUDNN_ACTIVATION_TANH), on cudnn::Pointwise.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16.
#pragma once

#include "cudnn/Pointwise.h"
#include "nn/Tanh.h"

namespace cudnn {

class Tanh : public Pointwise<nn::Tanh> {
 public:
  using Pointwise::Pointwise;
};

}  // namespace cudnn
