// SpatialBatchNormalization.h: the cuDNN twin of nn::SpatialBatchNormalization: batch normalisation per
// channel of [N x C x H x W] ([C x H x W] in evaluation) in CUDNN_BATCHNORM_SPATIAL mode,
// on cudnn::BatchNormBase (cudnn/BatchNormalization.h says how training, evaluation, both
// backward passes and 16-bit data with float32 statistics work).
#pragma once

#include "cudnn/BatchNormalization.h"
#include "nn/SpatialBatchNormalization.h"

namespace cudnn {
using SpatialBatchNormalization = BatchNormBase<nn::SpatialBatchNormalization>;
}  // namespace cudnn
