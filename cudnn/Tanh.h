// Tanh.h: the cuDNN twin of nn::Tanh (CUDNN_ACTIVATION_TANH), on cudnn::PointwiseBase.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16.
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/Tanh.h"

namespace cudnn {
using Tanh = PointwiseBase<nn::Tanh>;
}  // namespace cudnn
