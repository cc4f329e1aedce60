// activation.cpp
#include "cudnn/ops/activation.h"

#include <string>
#include <utility>

#include "cudnn/core/Handle.h"
#include "cudnn/kernels/Activation.h"
#include "tensor/Cuda.h"
#include "tensor/EnumTable.h"

namespace cudnn {

namespace {
// The activations cuDNN computes, and so the ones this plan runs.
constexpr std::pair<nn::Activation, cudnnActivationMode_t> kModes[] = {
    {nn::Activation::ReLU, CUDNN_ACTIVATION_RELU}, {nn::Activation::Sigmoid, CUDNN_ACTIVATION_SIGMOID},
    {nn::Activation::Tanh, CUDNN_ACTIVATION_TANH}, {nn::Activation::ClippedReLU, CUDNN_ACTIVATION_CLIPPED_RELU},
    {nn::Activation::ELU, CUDNN_ACTIVATION_ELU},
};

cudnnActivationMode_t cudnn_mode(nn::Activation a) {
  if (const auto mode = tensor::lookup(kModes, a)) return *mode;
  throw tensor::Error("cudnn::ActivationPlan: expected ReLU, ClippedReLU, Tanh, Sigmoid or ELU, got mode " +
                      std::to_string(static_cast<int>(a)));
}
}  // namespace

bool ActivationPlan::runs(nn::Activation mode) { return tensor::lookup(kModes, mode).has_value(); }

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
