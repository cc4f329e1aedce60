// Contiguous.h: cudnn.Contiguous, nn::Contiguous on CUDA tensors: the input laid out in the
// module's memory format (one copy where it is not already), gradInput in the input's layout.
// The nn module's tensor operations run on the GPU as they are (see TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Contiguous.h"

namespace cudnn {
using Contiguous = TensorOpBase<nn::Contiguous>;
}  // namespace cudnn
