// Squeeze.h: cudnn.Squeeze, nn::Squeeze on CUDA tensors: views (and, backward, copies) of device
// tensors through the tensor layer's kernels (TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Squeeze.h"

namespace cudnn {
using Squeeze = TensorOpBase<nn::Squeeze>;
}  // namespace cudnn
