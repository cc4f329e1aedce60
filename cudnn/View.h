// View.h: cudnn.View, nn::View on CUDA tensors: the output is a view of the input where the
// strides allow (a device copy otherwise); gradInput is gradOutput viewed as the input.
// The nn module's tensor operations run on the GPU as they are (see TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/View.h"

namespace cudnn {
using View = TensorOpBase<nn::View>;
}  // namespace cudnn
