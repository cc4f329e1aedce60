// Residual.h: cudnn.Residual, nn::Residual on CUDA tensors: block(x) + shortcut(x) and the two
// paths' gradInputs are summed on the device (copy_ + add_). Children may be cudnn or nn
// modules.
// The nn module's tensor operations run on the GPU as they are (see TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Residual.h"

namespace cudnn {
using Residual = TensorOpBase<nn::Residual>;
}  // namespace cudnn
