// SpatialMaxPooling.h: the cuDNN twin of nn::SpatialMaxPooling, on cudnn::PoolingBase: the maximum
// of each window (CUDNN_POOLING_MAX; MAX_DETERMINISTIC under the deterministic flag). Same
// constructor, fields (ceil mode included) and printing; input [C x H x W] or [N x C x H x W]
// on a CUDA device in float32, float64, float16 or bfloat16.
#pragma once

#include "cudnn/PoolingBase.h"
#include "nn/SpatialMaxPooling.h"

namespace cudnn {
using SpatialMaxPooling = PoolingBase<nn::SpatialMaxPooling>;
}  // namespace cudnn
