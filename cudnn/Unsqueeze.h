// Unsqueeze.h: cudnn.Unsqueeze, nn::Unsqueeze on CUDA tensors: views (and, backward, copies) of device
// tensors through the tensor layer's kernels (TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Unsqueeze.h"

namespace cudnn {
using Unsqueeze = TensorOpBase<nn::Unsqueeze>;
}  // namespace cudnn
