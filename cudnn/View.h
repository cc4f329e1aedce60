// View.h: cudnn.View, nn::View on CUDA tensors: the output is a view of the input where the
// strides allow (a device copy otherwise); gradInput is gradOutput viewed as the input.
// The nn module's tensor operations run on the GPU as they are (see TensorOpTwin.h).
#pragma once

#include "cudnn/TensorOpTwin.h"
#include "nn/View.h"

namespace cudnn {

class View : public TensorOpTwin<nn::View> {
 public:
  using TensorOpTwin::TensorOpTwin;
};

}  // namespace cudnn
