// SpatialAveragePooling.h: the cuDNN twin of nn::SpatialAveragePooling, on cudnn::PoolingBase: the
// mean of each window (CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, or _EXCLUDE_PADDING without
// count_include_pad). Same constructor, fields (ceil mode, count_include_pad) and printing;
// input [C x H x W] or [N x C x H x W] on a CUDA device in float32, float64, float16 or bfloat16.
#pragma once

#include "cudnn/PoolingBase.h"
#include "nn/SpatialAveragePooling.h"

namespace cudnn {
using SpatialAveragePooling = PoolingBase<nn::SpatialAveragePooling>;
}  // namespace cudnn
