// SpatialDilatedConvolution.h: the cuDNN twin of nn::SpatialDilatedConvolution (dilated 2-D), on
// cudnn::ConvolutionBase (cuDNN convolutions with dilation, through one ConvPlan).
// Same constructor, fields, parameters and printing; Torch's constructor with dilationW, dilationH. Computes on CUDA
// devices in float32, float64, float16 and bfloat16; algorithm choices per module with
// setMode / fastest / resetMode (nn::ConvAlgorithms).
#pragma once

#include "cudnn/ConvolutionBase.h"
#include "nn/SpatialDilatedConvolution.h"

namespace cudnn {
using SpatialDilatedConvolution = ConvolutionBase<nn::SpatialDilatedConvolution>;
}  // namespace cudnn
