// VolumetricConvolution.h: the cuDNN twin of nn::VolumetricConvolution (3-D), on
// cudnn::ConvolutionBase (3-d cuDNN convolutions through one ConvPlan; pinned
// algorithms cuDNN lacks in 3-d fall back, see Note [Choosing a convolution algorithm]).
// Same constructor, fields, parameters and printing; Groups, noBias(). Computes on CUDA
// devices in float32, float64, float16 and bfloat16; algorithm choices per module with
// setMode / fastest / resetMode (nn::ConvAlgorithms).
#pragma once

#include "cudnn/ConvolutionBase.h"
#include "nn/VolumetricConvolution.h"

namespace cudnn {
using VolumetricConvolution = ConvolutionBase<nn::VolumetricConvolution>;
}  // namespace cudnn
