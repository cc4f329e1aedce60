// Max.h: the cuDNN twin of nn::Max, on cudnn::ReductionBase: our kernels (cudnn/kernels/Reduce.h;
// cuDNN's cudnnReduceTensor does not give the first index on ties), nn's semantics, NaN and
// empty dimensions included. Same constructor, fields and printing; float32, float64, float16
// and bfloat16.
#pragma once

#include "cudnn/ReductionBase.h"
#include "nn/Max.h"

namespace cudnn {
using Max = ReductionBase<nn::Max>;
}  // namespace cudnn
