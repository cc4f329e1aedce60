// Abs.h: the cuDNN twin of nn::Abs (y = |x|, gradient dy sgn(x)), on cudnn::PointwiseBase. cuDNN has no
// activation mode for it: it runs on our kernels (cudnn/kernels/Activation.h), nn's formulas in
// acc_t<T>, so NaN and Inf come out as nn's (Note [Element-wise staples] in
// nn/kernels/Activation.h). Same constructor, fields and printing; float32, float64, float16
// and bfloat16.
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/Abs.h"

namespace cudnn {
using Abs = PointwiseBase<nn::Abs>;
}  // namespace cudnn
