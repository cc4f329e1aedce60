// TensorChecks.cpp
#include "cudnn/TensorChecks.h"

namespace cudnn {

void check_on_device(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& state) {
  if (!input.defined()) throw tensor::Error(where + "input is undefined");
  if (!input.is_cuda()) {
    throw tensor::Error(where + "expected input on a CUDA device, got " + input.description() +
                        " (move it with .to(tensor::Device::cuda()))");
  }
  if (state.defined() && state.device() != input.device()) {
    throw tensor::Error(where + "parameters are on " + state.device().str() + " but the input is on " +
                        input.device().str() + " (call .to(" + input.device().str() +
                        ") on the module, or convert() it)");
  }
}

void check_cuda(const std::string& where, const Tensor& t, const char* what) {
  if (!t.defined()) throw tensor::Error(where + what + " is undefined");
  if (!t.is_cuda()) {
    throw tensor::Error(where + "expected " + what + " on a CUDA device, got " + t.description() +
                        " (move it with .to(tensor::Device::cuda()))");
  }
  const DType d = t.dtype();
  if (d != DType::Float32 && d != DType::Float64 && d != DType::Float16 && d != DType::BFloat16) {
    throw tensor::Error(where + "expected a float32, float64, float16 or bfloat16 " + what + ", got " +
                        t.description());
  }
}

}  // namespace cudnn
