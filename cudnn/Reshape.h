// Reshape.h: cudnn.Reshape, nn::Reshape on CUDA tensors: the output is a view of the input
// where the strides allow (a device copy otherwise); gradInput is gradOutput reshaped back.
// The nn module's tensor operations run on the GPU as they are (see TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Reshape.h"

namespace cudnn {
using Reshape = TensorOpBase<nn::Reshape>;
}  // namespace cudnn
