// ReLU.h: the cuDNN twin of nn::ReLU (CUDNN_ACTIVATION_RELU), on cudnn::PointwiseBase.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16. In place as nn::ReLU(true).
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/ReLU.h"

namespace cudnn {
using ReLU = PointwiseBase<nn::ReLU>;
}  // namespace cudnn
