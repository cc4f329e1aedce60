// Reshape.h: cudnn.Reshape, nn::Reshape on CUDA tensors: the output is a view of the input
// where the strides allow (a device copy otherwise); gradInput is gradOutput reshaped back.
// The nn module's tensor operations run on the GPU as they are (see TensorOpTwin.h).
#pragma once

#include "cudnn/TensorOpTwin.h"
#include "nn/Reshape.h"

namespace cudnn {

class Reshape : public TensorOpTwin<nn::Reshape> {
 public:
  using TensorOpTwin::TensorOpTwin;
};

}  // namespace cudnn
