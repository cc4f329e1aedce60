// Power.h: the cuDNN twin of nn::Power (y = x^pow), on cudnn::PointwiseBase. cuDNN has no
// activation mode for it: it runs on our kernels (cudnn/kernels/Activation.h), nn's formulas in
// acc_t<T>, so NaN and Inf come out as nn's (Note [Element-wise staples] in
// nn/kernels/Activation.h). Same constructor, fields and printing; float32, float64, float16
// and bfloat16.
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/Power.h"

namespace cudnn {
using Power = PointwiseBase<nn::Power>;
}  // namespace cudnn
