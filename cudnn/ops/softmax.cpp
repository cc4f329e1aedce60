// softmax.cpp
#include "cudnn/ops/softmax.h"

#include "cudnn/core/Handle.h"
#include "tensor/Cuda.h"

namespace cudnn {

namespace {
cudnnSoftmaxAlgorithm_t cudnn_algo(SoftmaxAlgo a) {
  switch (a) {
    case SoftmaxAlgo::Fast: return CUDNN_SOFTMAX_FAST;
    case SoftmaxAlgo::Accurate: return CUDNN_SOFTMAX_ACCURATE;
    case SoftmaxAlgo::Log: return CUDNN_SOFTMAX_LOG;
  }
  return CUDNN_SOFTMAX_ACCURATE;
}
cudnnSoftmaxMode_t cudnn_mode(SoftmaxMode m) {
  return m == SoftmaxMode::Instance ? CUDNN_SOFTMAX_MODE_INSTANCE : CUDNN_SOFTMAX_MODE_CHANNEL;
}
// cuDNN softmax takes 4-d tensors (or 5-d); more spatial dims fold into the last.
Tensor as_nchw(const Tensor& t) {
  if (t.dim() <= 5) return t;
  return t.reshape({t.size(0), t.size(1), -1});
}
}  // namespace

// An empty tensor (an empty batch: the cross-entropy criteria call these directly) has nothing to
// compute, and cuDNN takes no tensor descriptor with a size 0.
void SoftmaxPlan::forward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor& x_in, const Tensor& y_in) {
  if (x_in.numel() == 0) return;
  tensor::cuda::DeviceGuard guard(x_in.device().index);
  const Tensor x = as_nchw(x_in), y = as_nchw(y_in);
  const DType t = x.dtype();
  CUDNN_CHECK(cudnnSoftmaxForward(handle(), cudnn_algo(algo), cudnn_mode(mode), Scalar(1, t).ptr(), x_desc_.set(x),
                                  x.raw_data(), Scalar(0, t).ptr(), y_desc_.set(y), y.raw_data()));
}

void SoftmaxPlan::backward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor& y_in, const Tensor& dy_in,
                           const Tensor& dx_in) {
  if (y_in.numel() == 0) return;
  tensor::cuda::DeviceGuard guard(y_in.device().index);
  const Tensor y = as_nchw(y_in), dy = as_nchw(dy_in), dx = as_nchw(dx_in);
  const DType t = y.dtype();
  CUDNN_CHECK(cudnnSoftmaxBackward(handle(), cudnn_algo(algo), cudnn_mode(mode), Scalar(1, t).ptr(), y_desc_.set(y),
                                   y.raw_data(), y_desc_.get(), dy.raw_data(), Scalar(0, t).ptr(), x_desc_.set(dx),
                                   dx.raw_data()));
}

Tensor softmax(const Tensor& x, SoftmaxAlgo algo, SoftmaxMode mode) {
  check_cuda("cudnn::softmax: ", x, "x");
  if (x.dim() < 2) throw tensor::Error("cudnn::softmax: expected [N x C x ...], got " + tensor::shape_str(x.sizes()));
  const Tensor xc = x.contiguous();
  Tensor y = tensor::empty_like(xc);
  SoftmaxPlan().forward(algo, mode, xc, y);
  return y;
}

Tensor softmax_grad(const Tensor& y, const Tensor& dy, SoftmaxAlgo algo, SoftmaxMode mode) {
  check_cuda("cudnn::softmax_grad: ", y, "y");
  check_cuda("cudnn::softmax_grad: ", dy, "dy");
  if (y.sizes() != dy.sizes()) {
    throw tensor::Error("cudnn::softmax_grad: y " + tensor::shape_str(y.sizes()) + " and dy " +
                        tensor::shape_str(dy.sizes()) + " differ");
  }
  Tensor dx = tensor::empty(y.sizes(), y.dtype(), y.device());
  SoftmaxPlan().backward(algo, mode, y.contiguous(), dy.contiguous(), dx);
  return dx;
}

}  // namespace cudnn
