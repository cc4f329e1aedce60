// Select.h: cudnn.Select, nn::Select on CUDA tensors: the output is a view of the input and
// gradInput a device tensor holding gradOutput in the selected slice (TensorOpTwin.h).
#pragma once

#include "cudnn/TensorOpTwin.h"
#include "nn/Select.h"

namespace cudnn {

class Select : public TensorOpTwin<nn::Select> {
 public:
  using TensorOpTwin::TensorOpTwin;
};

}  // namespace cudnn
