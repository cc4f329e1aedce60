// VolumetricAveragePooling.h: the cuDNN twin of nn::VolumetricAveragePooling, on cudnn::PoolingBase:
// the mean of each window (CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, or _EXCLUDE_PADDING
// without count_include_pad). Same constructor, fields (padding, ceil mode, count_include_pad)
// and printing; input [C x T x H x W] or [N x C x T x H x W] on a CUDA device in float32,
// float64, float16 or bfloat16.
#pragma once

#include "cudnn/PoolingBase.h"
#include "nn/VolumetricAveragePooling.h"

namespace cudnn {
using VolumetricAveragePooling = PoolingBase<nn::VolumetricAveragePooling>;
}  // namespace cudnn
