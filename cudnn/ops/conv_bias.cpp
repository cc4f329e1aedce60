// conv_bias.cpp: the bias passes of the convolutions, y += bias and db = sum of dy.
#include <mutex>

#include "cudnn/core/Handle.h"
#include "cudnn/kernels/Bias.h"
#include "cudnn/ops/conv_plan.h"
#include "tensor/Cuda.h"

namespace cudnn {

// Note [Bias without cuDNN]
// Dense outputs (row-major or channels-last) take the kernels of kernels/Bias.cu, which are
// several times faster (Note [Bias kernels] there); other layouts take cuDNN's calls below.
// cudnnAddTensor and cudnnConvolutionBackwardBias are legacy calls whose documentation does
// not list the dtypes they take (bfloat16 is the doubtful one). Where cuDNN answers
// NOT_SUPPORTED (or, for bfloat16, BAD_PARAM) the same arithmetic runs on the tensor layer's
// CUDA kernels instead: a broadcast add, and two sums that accumulate in float32. That path
// allocates temporaries (through the caching allocator) and says so once per dtype in
// verbose mode; every other status is an error as usual.

namespace conv_detail {

namespace {
Shape bias_shape(const Tensor& y) {
  Shape s(static_cast<size_t>(std::max<int64_t>(y.dim(), 4)), 1);
  s[1] = y.size(1);
  return s;
}

bool bias_unsupported(cudnnStatus_t st, DType dtype, const char* call) {
  const bool fallback = CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED ||
                        (dtype == DType::BFloat16 && CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM);
  if (!fallback) return false;
  static std::mutex mutex;
  static unsigned said = 0;
  std::lock_guard<std::mutex> lock(mutex);
  const unsigned bit = 1u << (static_cast<unsigned>(dtype) % 32);
  if (!(said & bit)) {
    said |= bit;
    log(std::string(call) + " does not take " + tensor::name(dtype) + " data (" + cudnnGetErrorString(st) +
        "): using the tensor kernels instead");
  }
  return true;
}
}  // namespace

void add_bias_with(TensorDescriptor& yd, TensorDescriptor& bd, const Tensor& y, const Tensor& bias) {
  if (kernels::bias_add(y, bias.view({bias.numel()}))) return;  // Note [Bias kernels] in kernels/Bias.cu
  tensor::cuda::DeviceGuard guard(y.device().index);
  const Tensor b = bias.view(bias_shape(y));
  const cudnnStatus_t st = cudnnAddTensor(handle(), Scalar(1, y.dtype()).ptr(), bd.set(b), b.raw_data(),
                                          Scalar(1, y.dtype()).ptr(), yd.set(y), y.raw_data());
  if (st == CUDNN_STATUS_SUCCESS) return;
  if (!bias_unsupported(st, y.dtype(), "cudnnAddTensor"))
    detail::throw_cudnn_error(st, "cudnnAddTensor", __FILE__, __LINE__);
  Tensor(y).add_(b);
}

void backward_bias_with(TensorDescriptor& dyd, TensorDescriptor& dbd, const Tensor& dy, const Tensor& db, double alpha,
                        double beta) {
  if (kernels::bias_grad(dy, db.view({db.numel()}), alpha, beta)) return;  // Note [Bias kernels] in kernels/Bias.cu
  tensor::cuda::DeviceGuard guard(dy.device().index);
  const Tensor b = db.view(bias_shape(dy));
  const cudnnStatus_t st =
      cudnnConvolutionBackwardBias(handle(), Scalar(alpha, dy.dtype()).ptr(), dyd.set(dy), dy.raw_data(),
                                   Scalar(beta, dy.dtype()).ptr(), dbd.set(b), b.raw_data());
  if (st == CUDNN_STATUS_SUCCESS) return;
  if (!bias_unsupported(st, dy.dtype(), "cudnnConvolutionBackwardBias")) {
    detail::throw_cudnn_error(st, "cudnnConvolutionBackwardBias", __FILE__, __LINE__);
  }
  const int64_t C = dy.size(1);
  const Tensor sums = dy.reshape({dy.size(0), C, -1}).sum(2).sum(0);
  Tensor flat = db.view({C});
  if (beta == 0)
    flat.zero_();  // beta 0 ignores what db held, NaN included
  else if (beta != 1)
    flat.mul_(beta);
  flat.add_(sums, alpha);
}

}  // namespace conv_detail

using conv_detail::add_bias_with;
using conv_detail::backward_bias_with;

void add_bias(const Tensor& y, const Tensor& bias) {
  TensorDescriptor yd, bd;
  add_bias_with(yd, bd, y, bias);
}

void backward_bias(const Tensor& dy, const Tensor& db, double alpha, double beta) {
  TensorDescriptor dyd, dbd;
  backward_bias_with(dyd, dbd, dy, db, alpha, beta);
}

void ConvPlan::add_bias(const Tensor& y, const Tensor& bias) {
  add_bias_with(impl_->bias_data_desc, impl_->bias_desc, y, bias);
}

void ConvPlan::backward_bias(const Tensor& dy, const Tensor& db, double alpha, double beta) {
  backward_bias_with(impl_->bias_data_desc, impl_->bias_desc, dy, db, alpha, beta);
}

bool ConvPlan::backward_bias_on(void* stream, const Tensor& dy, const Tensor& db, double alpha, double beta,
                                Tensor& keep) {
  return kernels::bias_grad(dy, db.view({db.numel()}), alpha, beta, stream, &keep);
}

}  // namespace cudnn
