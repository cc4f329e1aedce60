// SpatialSoftMax.h: the cuDNN twin of nn::SpatialSoftMax: softmax over nn's layout() in CHANNEL
// mode, accurate by default or fastMode(true), on cudnn::SoftMaxBase.
// Same constructor and printing; computes on CUDA devices in float32, float64, float16, bfloat16.
#pragma once

#include "cudnn/SoftMaxBase.h"
#include "nn/SpatialSoftMax.h"

namespace cudnn {
using SpatialSoftMax = SoftMaxBase<nn::SpatialSoftMax>;
}  // namespace cudnn
