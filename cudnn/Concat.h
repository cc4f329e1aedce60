// Concat.h: cudnn.Concat, nn::Concat on CUDA tensors: the children's outputs are concatenated
// on the device (narrow + copy_) and their gradInputs summed there (add_). Children may be
// cudnn or nn modules.
// The nn module's tensor operations run on the GPU as they are (see TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Concat.h"

namespace cudnn {
using Concat = TensorOpBase<nn::Concat>;
}  // namespace cudnn
