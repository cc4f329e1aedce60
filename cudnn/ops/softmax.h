// softmax.h: cuDNN softmax, Theano's GpuDnnSoftmax / its gradient.
//   softmax(x, algo, mode)                  y
//   softmax_grad(y, dy, algo, mode)         dx
// x is [N x C x (D x H x W)]; mode instance: over C*D*H*W for each n; mode channel: over
// C at each (n, d, h, w). algo fast (no max subtraction), accurate (default), log (log-softmax;
// the gradient then takes log-softmax output). nn's SoftMax/LogSoftMax on [batch x n] are
// channel mode on [batch x n x 1 x 1]; the Spatial and Volumetric ones are channel mode. With one
// position per sample cuDNN is asked for instance mode, the same softmax (See Note [Softmax over
// the channels of one position] in softmax.cpp).
#pragma once

#include "cudnn/Functional.h"
#include "cudnn/core/Descriptors.h"

namespace cudnn {

// SoftmaxAlgo, SoftmaxMode, softmax and softmax_grad: cudnn/Functional.h.

class SoftmaxPlan {
 public:
  // x and y (and dy, dx) as [N x C x rest...]; views of any rank >= 2 are described as 4-d or 5-d.
  void forward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor& x, const Tensor& y);
  void backward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor& y, const Tensor& dy, const Tensor& dx);

 private:
  TensorDescriptor y_desc_, x_desc_;
};

}  // namespace cudnn
