// activation.h: cuDNN pointwise activations (relu, sigmoid, tanh, clipped relu, elu).
//   activation_forward(mode, coef, x, y)            y = f(x) (y may be x: in place)
//   activation_backward(mode, coef, x, y, dy, dx)   dx = f'(x) dy
// coef is the ceiling of clipped relu and the alpha of elu. The twins cudnn::ReLU,
// ClippedReLU, Sigmoid, Tanh and ELU share one ActivationPlan through cudnn::PointwiseBase.
// relu runs on our packed kernels (Note [ReLU kernels] in cudnn/kernels/Activation.h), whose
// backward reads y (y > 0 exactly where x > 0 when y = relu(x)); the rest on cuDNN's.
#pragma once

#include "cudnn/core/Descriptors.h"
#include "nn/Activation.h"

namespace cudnn {

// The one activation enumeration (nn/Activation.h), named here as the ops use it.
using Activation = nn::Activation;

class ActivationPlan {
 public:
  // Whether cuDNN's activation API (or our ReLU kernels) runs `mode`: ReLU, ClippedReLU, Tanh,
  // Sigmoid and ELU; the others (GELU, GELUTanh, SiLU, LeakyReLU) run on cudnn/kernels/Activation.h.
  static bool runs(nn::Activation mode);
  void forward(nn::Activation mode, double coef, const Tensor& x, const Tensor& y);
  void backward(nn::Activation mode, double coef, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx);

 private:
  ActivationDescriptor desc_;
  TensorDescriptor x_desc_, y_desc_;
};

}  // namespace cudnn
