// ClippedReLU.h: the cuDNN twin of nn::ClippedReLU (CUDNN_ACTIVATION_CLIPPED_RELU), on cudnn::Pointwise.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16. In place as nn::ClippedReLU(ceiling, true); its in-place gradient is
// taken from the output (Note [In-place activation gradients] in cudnn/Pointwise.h).
#pragma once

#include "cudnn/Pointwise.h"
#include "nn/ClippedReLU.h"

namespace cudnn {

class ClippedReLU : public Pointwise<nn::ClippedReLU> {
 public:
  using Pointwise::Pointwise;
};

}  // namespace cudnn
