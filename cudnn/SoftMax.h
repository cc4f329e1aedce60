// SoftMax.h: the cuDNN twin of nn::SoftMax: softmax over nn's layout() in CHANNEL
// mode, accurate by default or fastMode(true), on cudnn::SoftMaxBase.
// Same constructor and printing; computes on CUDA devices in float32, float64, float16, bfloat16.
#pragma once

#include "cudnn/SoftMaxBase.h"
#include "nn/SoftMax.h"

namespace cudnn {
using SoftMax = SoftMaxBase<nn::SoftMax>;
}  // namespace cudnn
