// VolumetricFullConvolution.h: the cuDNN twin of nn::VolumetricFullConvolution (transposed 3-D), on
// cudnn::ConvolutionBase (forward = cuDNN's 3-d backward-data pass,
// updateGradInput = its forward pass: Note [Convolution twins] in ConvolutionBase.cpp).
// Same constructor, fields, parameters and printing; adjT/adjW/adjH, groups, noBias(). Computes on CUDA
// devices in float32, float64, float16 and bfloat16; algorithm choices per module with
// setMode / fastest / resetMode (nn::ConvAlgorithms).
#pragma once

#include "cudnn/ConvolutionBase.h"
#include "nn/VolumetricFullConvolution.h"

namespace cudnn {
using VolumetricFullConvolution = ConvolutionBase<nn::VolumetricFullConvolution>;
}  // namespace cudnn
