// Sigmoid.h: the cuDNN twin of nn::Sigmoid (CUDNN_ACTIVATION_SIGMOID), on cudnn::PointwiseBase.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16.
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/Sigmoid.h"

namespace cudnn {
using Sigmoid = PointwiseBase<nn::Sigmoid>;
}  // namespace cudnn
