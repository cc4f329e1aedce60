// Identity.h: cudnn.Identity, nn::Identity on CUDA tensors: output = input and gradInput =
// gradOutput, shared, not copied (nothing to compute).
// The nn module's tensor operations run on the GPU as they are (see TensorOpBase.h).
#pragma once

#include "cudnn/TensorOpBase.h"
#include "nn/Identity.h"

namespace cudnn {
using Identity = TensorOpBase<nn::Identity>;
}  // namespace cudnn
