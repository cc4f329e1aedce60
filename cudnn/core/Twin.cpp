// Twin.cpp
#include "cudnn/core/Twin.h"

namespace cudnn {

void check_on_device(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& state) {
  if (!input.defined()) throw tensor::Error(where + "input is undefined");
  if (!input.is_cuda()) {
    throw tensor::Error(where + "expected input on a CUDA device, got " + input.description() +
                        " (move it with .to(tensor::Device::cuda()))");
  }
  if (state.defined() && state.device() != input.device()) {
    throw tensor::Error(where + "parameters are on " + state.device().str() + " but the input is on " +
                        input.device().str() + " (call .to(" + input.device().str() + ") on the module, or convert() it)");
  }
}

}  // namespace cudnn
