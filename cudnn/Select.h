// Select.h: cudnn.Select, nn::Select on CUDA tensors: the output is a view of the input and
// gradInput a device tensor holding gradOutput in the selected slice (TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Select.h"

namespace cudnn {
using Select = TensorOpBase<nn::Select>;
}  // namespace cudnn
