// VolumetricMaxPooling.h: the cuDNN twin of nn::VolumetricMaxPooling, on cudnn::PoolingBase: the
// maximum of each window (CUDNN_POOLING_MAX; MAX_DETERMINISTIC under the deterministic flag).
// Same constructor, fields (ceil mode included) and printing; input [C x T x H x W] or
// [N x C x T x H x W] on a CUDA device in float32, float64, float16 or bfloat16.
#pragma once

#include "cudnn/PoolingBase.h"
#include "nn/VolumetricMaxPooling.h"

namespace cudnn {
using VolumetricMaxPooling = PoolingBase<nn::VolumetricMaxPooling>;
}  // namespace cudnn
