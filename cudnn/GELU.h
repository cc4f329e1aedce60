// GELU.h: the cuDNN twin of nn::GELU (erf form, or approximate = "tanh"), on cudnn::PointwiseBase;
// our kernels (cudnn/kernels/Activation.h) compute it, as cuDNN's activation API has no GELU.
// Same constructor, fields and printing; float32, float64, float16 and bfloat16 on CUDA
// devices. No in-place variant (the backward pass reads the input), as nn::GELU.
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/GELU.h"

namespace cudnn {
using GELU = PointwiseBase<nn::GELU>;
}  // namespace cudnn
