// Narrow.h: cudnn.Narrow, nn::Narrow on CUDA tensors: views (and, backward, copies) of device
// tensors through the tensor layer's kernels (TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Narrow.h"

namespace cudnn {
using Narrow = TensorOpBase<nn::Narrow>;
}  // namespace cudnn
