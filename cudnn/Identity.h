// Identity.h: cudnn.Identity, nn::Identity on CUDA tensors: output = input and gradInput =
// gradOutput, shared, not copied (nothing to compute).
// The nn module's tensor operations run on the GPU as they are (see TensorOpTwin.h).
#pragma once

#include "cudnn/TensorOpTwin.h"
#include "nn/Identity.h"

namespace cudnn {

class Identity : public TensorOpTwin<nn::Identity> {
 public:
  using TensorOpTwin::TensorOpTwin;
};

}  // namespace cudnn
