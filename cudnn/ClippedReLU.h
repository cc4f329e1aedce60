// ClippedReLU.h: the cuDNN twin of nn::ClippedReLU (CUDNN_ACTIVATION_CLIPPED_RELU), on cudnn::PointwiseBase.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16. In place as nn::ClippedReLU(ceiling, true); its in-place gradient is
// taken from the output (Note [In-place activation gradients] in cudnn/PointwiseBase.h).
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/ClippedReLU.h"

namespace cudnn {
using ClippedReLU = PointwiseBase<nn::ClippedReLU>;
}  // namespace cudnn
