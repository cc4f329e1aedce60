// activation.cpp
#include "cudnn/ops/activation.h"

#include "cudnn/core/Handle.h"
#include "cudnn/kernels/Activation.h"
#include "tensor/Cuda.h"

namespace cudnn {

namespace {
cudnnActivationMode_t cudnn_mode(Activation a) {
  switch (a) {
    case Activation::Relu: return CUDNN_ACTIVATION_RELU;
    case Activation::Sigmoid: return CUDNN_ACTIVATION_SIGMOID;
    case Activation::Tanh: return CUDNN_ACTIVATION_TANH;
    case Activation::ClippedRelu: return CUDNN_ACTIVATION_CLIPPED_RELU;
    case Activation::Elu: return CUDNN_ACTIVATION_ELU;
  }
  return CUDNN_ACTIVATION_RELU;
}
}  // namespace

void ActivationPlan::forward(Activation mode, double coef, const Tensor& x, const Tensor& y) {
  if (mode == Activation::Relu) return kernels::relu_forward(x, y);
  tensor::cuda::DeviceGuard guard(x.device().index);
  desc_.set(cudnn_mode(mode), coef);
  const DType t = x.dtype();
  CUDNN_CHECK(cudnnActivationForward(handle(), desc_.get(), Scalar(1, t).ptr(), x_desc_.set(x), x.raw_data(),
                                     Scalar(0, t).ptr(), y_desc_.set(y), y.raw_data()));
}

void ActivationPlan::backward(Activation mode, double coef, const Tensor& x, const Tensor& y, const Tensor& dy,
                              const Tensor& dx) {
  if (mode == Activation::Relu) return kernels::relu_backward_from_output(y, dy, dx);
  tensor::cuda::DeviceGuard guard(x.device().index);
  desc_.set(cudnn_mode(mode), coef);
  const DType t = x.dtype();
  // All four tensors share one shape and layout, so two descriptors serve them.
  CUDNN_CHECK(cudnnActivationBackward(handle(), desc_.get(), Scalar(1, t).ptr(), y_desc_.set(y), y.raw_data(),
                                      y_desc_.get(), dy.raw_data(), x_desc_.set(x), x.raw_data(), Scalar(0, t).ptr(),
                                      x_desc_.get(), dx.raw_data()));
}

}  // namespace cudnn
