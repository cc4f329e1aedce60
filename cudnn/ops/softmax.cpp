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
// Note [Softmax over the channels of one position]
// cuDNN's channel-mode backward gives each (n, position) one thread that walks the C channels
// in turn, so with one position per sample ([N x C x 1 x 1]: every classifier's loss, SoftMax on
// [batch x n]) only N threads run: [64 x 1000] took 0.145 ms, [128 x 1000] 0.29 ms (AlexNet's
// step is 3.4 ms) and [1024 x 32000] 60 ms, against 0.005, 0.006 and 0.20 ms in instance mode
// (H100, float32; .data/smprobe.cu). With one position the two modes are the same softmax, so
// such tensors take instance mode, forward (no slower there) and backward alike.
cudnnSoftmaxMode_t cudnn_mode(SoftmaxMode m, const Tensor& x) {
  const bool one_position = x.dim() >= 2 && x.numel() == x.size(0) * x.size(1);
  return m == SoftmaxMode::Instance || one_position ? CUDNN_SOFTMAX_MODE_INSTANCE : CUDNN_SOFTMAX_MODE_CHANNEL;
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
  CUDNN_CHECK(cudnnSoftmaxForward(handle(), cudnn_algo(algo), cudnn_mode(mode, x), Scalar(1, t).ptr(), x_desc_.set(x),
                                  x.raw_data(), Scalar(0, t).ptr(), y_desc_.set(y), y.raw_data()));
}

void SoftmaxPlan::backward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor& y_in, const Tensor& dy_in,
                           const Tensor& dx_in) {
  if (y_in.numel() == 0) return;
  tensor::cuda::DeviceGuard guard(y_in.device().index);
  const Tensor y = as_nchw(y_in), dy = as_nchw(dy_in), dx = as_nchw(dx_in);
  const DType t = y.dtype();
  CUDNN_CHECK(cudnnSoftmaxBackward(handle(), cudnn_algo(algo), cudnn_mode(mode, y), Scalar(1, t).ptr(), y_desc_.set(y),
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
