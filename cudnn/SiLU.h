// SiLU.h: the cuDNN twin of nn::SiLU (x sigmoid(x)), on cudnn::PointwiseBase; our kernels
// (cudnn/kernels/Activation.h) compute it, as cuDNN's activation API has no SiLU. Float32,
// float64, float16 and bfloat16 on CUDA devices; no in-place variant, as nn::SiLU.
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/SiLU.h"

namespace cudnn {
using SiLU = PointwiseBase<nn::SiLU>;
}  // namespace cudnn
