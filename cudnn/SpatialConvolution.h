// SpatialConvolution.h: the cuDNN twin of nn::SpatialConvolution (2-D), on
// cudnn::ConvolutionBase (cudnnConvolutionForward, BackwardData and BackwardFilter
// through one ConvPlan; the bias fused into the forward or on our kernels, Note [Bias without cuDNN]).
// Same constructor, fields, parameters and printing; Groups, dilation (dilationW/dilationH), noBias(). Computes on CUDA
// devices in float32, float64, float16 and bfloat16; algorithm choices per module with
// setMode / fastest / resetMode (nn::ConvAlgorithms).
#pragma once

#include "cudnn/ConvolutionBase.h"
#include "nn/SpatialConvolution.h"

namespace cudnn {
using SpatialConvolution = ConvolutionBase<nn::SpatialConvolution>;
}  // namespace cudnn
