// Residual.h: cudnn.Residual, nn::Residual on CUDA tensors: block(x) + shortcut(x) and the two
// paths' gradInputs are summed on the device (copy_ + add_). Children may be cudnn or nn
// modules.
// The nn module's tensor operations run on the GPU as they are (see TensorOpTwin.h).
#pragma once

#include "cudnn/TensorOpTwin.h"
#include "nn/Residual.h"

namespace cudnn {

class Residual : public TensorOpTwin<nn::Residual> {
 public:
  using TensorOpTwin::TensorOpTwin;
};

}  // namespace cudnn
