// Transpose.h: cudnn.Transpose, nn::Transpose on CUDA tensors: views (and, backward, copies) of device
// tensors through the tensor layer's kernels (TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Transpose.h"

namespace cudnn {
using Transpose = TensorOpBase<nn::Transpose>;
}  // namespace cudnn
