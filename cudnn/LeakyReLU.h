// LeakyReLU.h: the cuDNN twin of nn::LeakyReLU, on cudnn::PointwiseBase; our kernels
// (cudnn/kernels/Activation.h) compute it with nn's bits in every dtype. Same constructor,
// fields and printing; in place as nn::LeakyReLU(slope, true) (a slope >= 0).
#pragma once

#include "cudnn/PointwiseBase.h"
#include "nn/LeakyReLU.h"

namespace cudnn {
using LeakyReLU = PointwiseBase<nn::LeakyReLU>;
}  // namespace cudnn
