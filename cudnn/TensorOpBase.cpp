// TensorOpBase.cpp
#include "cudnn/TensorOpBase.h"

namespace cudnn {

void check_grad_on_device(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& gradOutput) {
  check_on_device(where, input, tensor::Tensor());
  if (!gradOutput.defined()) throw tensor::Error(where + "gradOutput is undefined");
  if (gradOutput.device() != input.device()) {
    throw tensor::Error(where + "expected gradOutput on " + input.device().str() + " (the input's device), got " +
                        gradOutput.description());
  }
}

}  // namespace cudnn
