// Padding.h: cudnn.Padding, nn::Padding on CUDA tensors: a fill and copies of device tensors
// through the tensor layer's kernels (TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Padding.h"

namespace cudnn {
using Padding = TensorOpBase<nn::Padding>;
}  // namespace cudnn
