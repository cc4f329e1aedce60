// VolumetricLogSoftMax.h: the cuDNN twin of nn::VolumetricLogSoftMax: log-softmax over nn's layout() in CHANNEL
// mode (CUDNN_SOFTMAX_LOG), on cudnn::SoftMaxBase.
// Same constructor and printing; computes on CUDA devices in float32, float64, float16, bfloat16.
#pragma once

#include "cudnn/SoftMaxBase.h"
#include "nn/VolumetricLogSoftMax.h"

namespace cudnn {
using VolumetricLogSoftMax = SoftMaxBase<nn::VolumetricLogSoftMax>;
}  // namespace cudnn
