// LogSoftMax.h: the cuDNN twin of nn::LogSoftMax: log-softmax over nn's layout() in CHANNEL
// mode (CUDNN_SOFTMAX_LOG), on cudnn::SoftMaxBase.
// Same constructor and printing; computes on CUDA devices in float32, float64, float16, bfloat16.
#pragma once

#include "cudnn/SoftMaxBase.h"
#include "nn/LogSoftMax.h"

namespace cudnn {
using LogSoftMax = SoftMaxBase<nn::LogSoftMax>;
}  // namespace cudnn
