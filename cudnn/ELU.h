// ELU.h: the cuDNN twin of nn::ELU (CUDNN_ACTIVATION_ELU, coef = alpha), on cudnn::PointwiseBase.
// Same constructor, fields and printing; computes on CUDA devices in float32, float64,
// float16 and bfloat16. In place as nn::ELU(alpha, true). At exactly y = 0
// cuDNN takes the gradient 1 where nn takes alpha (a kink; measure zero).
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/ELU.h"

namespace cudnn {
using ELU = PointwiseBase<nn::ELU>;
}  // namespace cudnn
