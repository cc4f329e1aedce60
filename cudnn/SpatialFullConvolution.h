// SpatialFullConvolution.h: the cuDNN twin of nn::SpatialFullConvolution (transposed 2-D), on
// cudnn::ConvolutionBase (its forward is cuDNN's backward-data pass, its
// updateGradInput the forward pass: Note [Convolution twins] in ConvolutionBase.cpp).
// Same constructor, fields, parameters and printing; adjW/adjH, groups, noBias(). Computes on CUDA
// devices in float32, float64, float16 and bfloat16; algorithm choices per module with
// setMode / fastest / resetMode (nn::ConvAlgorithms).
#pragma once

#include "cudnn/ConvolutionBase.h"
#include "nn/SpatialFullConvolution.h"

namespace cudnn {
using SpatialFullConvolution = ConvolutionBase<nn::SpatialFullConvolution>;
}  // namespace cudnn
