// activation.cpp
#include "cudnn/ops/activation.h"

#include <string>

#include "cudnn/core/Handle.h"
#include "cudnn/kernels/Activation.h"
#include "tensor/Cuda.h"

namespace cudnn {

namespace {
cudnnActivationMode_t cudnn_mode(nn::Activation a) {
  switch (a) {
    case nn::Activation::ReLU:
      return CUDNN_ACTIVATION_RELU;
    case nn::Activation::Sigmoid:
      return CUDNN_ACTIVATION_SIGMOID;
    case nn::Activation::Tanh:
      return CUDNN_ACTIVATION_TANH;
    case nn::Activation::ClippedReLU:
      return CUDNN_ACTIVATION_CLIPPED_RELU;
    case nn::Activation::ELU:
      return CUDNN_ACTIVATION_ELU;
    default:
      break;
  }
  throw tensor::Error("cudnn::ActivationPlan: expected ReLU, ClippedReLU, Tanh, Sigmoid or ELU, got mode " +
                      std::to_string(static_cast<int>(a)));
}
}  // namespace

bool ActivationPlan::runs(nn::Activation mode) {
  switch (mode) {
    case nn::Activation::ReLU:
    case nn::Activation::ClippedReLU:
    case nn::Activation::Tanh:
    case nn::Activation::Sigmoid:
    case nn::Activation::ELU:
      return true;
    default:
      return false;
  }
}

void ActivationPlan::forward(nn::Activation mode, double coef, const Tensor& x, const Tensor& y) {
  if (mode == nn::Activation::ReLU) return kernels::relu_forward(x, y);
  tensor::cuda::DeviceGuard guard(x.device().index);
  desc_.set(cudnn_mode(mode), coef);
  const DType t = x.dtype();
  CUDNN_CHECK(cudnnActivationForward(handle(), desc_.get(), Scalar(1, t).ptr(), x_desc_.set(x), x.raw_data(),
                                     Scalar(0, t).ptr(), y_desc_.set(y), y.raw_data()));
}

void ActivationPlan::backward(nn::Activation mode, double coef, const Tensor& x, const Tensor& y, const Tensor& dy,
                              const Tensor& dx) {
  if (mode == nn::Activation::ReLU) return kernels::relu_backward_from_output(y, dy, dx);
  tensor::cuda::DeviceGuard guard(x.device().index);
  desc_.set(cudnn_mode(mode), coef);
  const DType t = x.dtype();
  // All four tensors share one shape and layout, so two descriptors serve them.
  CUDNN_CHECK(cudnnActivationBackward(handle(), desc_.get(), Scalar(1, t).ptr(), y_desc_.set(y), y.raw_data(),
                                      y_desc_.get(), dy.raw_data(), x_desc_.set(x), x.raw_data(), Scalar(0, t).ptr(),
                                      x_desc_.get(), dx.raw_data()));
}

}  // namespace cudnn
