// Concat.h: cudnn.Concat, nn::Concat on CUDA tensors: the children's outputs are concatenated
// on the device (narrow + copy_) and their gradInputs summed there (add_). Children may be
// cudnn or nn modules.
// The nn module's tensor operations run on the GPU as they are (see TensorOpTwin.h).
#pragma once

#include "cudnn/TensorOpTwin.h"
#include "nn/Concat.h"

namespace cudnn {

class Concat : public TensorOpTwin<nn::Concat> {
 public:
  using TensorOpTwin::TensorOpTwin;
};

}  // namespace cudnn
