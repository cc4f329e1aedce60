// lrn.cpp
#include "cudnn/ops/lrn.h"

#include "cudnn/Handle.h"
#include "tensor/Cuda.h"

namespace cudnn {

void check_lrn_arguments(const std::string& where, int64_t size, double beta, double k) {
  if (size < CUDNN_LRN_MIN_N || size > CUDNN_LRN_MAX_N || k < CUDNN_LRN_MIN_K || beta < CUDNN_LRN_MIN_BETA) {
    throw tensor::Error(where + "cuDNN takes size " + std::to_string(CUDNN_LRN_MIN_N) + ".." +
                        std::to_string(CUDNN_LRN_MAX_N) + ", k >= " + std::to_string(CUDNN_LRN_MIN_K) + ", beta >= " +
                        std::to_string(CUDNN_LRN_MIN_BETA) + "; got size " + std::to_string(size) + ", k " +
                        std::to_string(k) + ", beta " + std::to_string(beta) + " (keep this layer in nn)");
  }
}

void LRNPlan::forward(int size, double alpha, double beta, double k, const Tensor& x, const Tensor& y) {
  tensor::cuda::DeviceGuard guard(x.device().index);
  desc_.set(static_cast<unsigned>(size), alpha, beta, k);
  const DType t = x.dtype();
  CUDNN_CHECK(cudnnLRNCrossChannelForward(handle(), desc_.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, Scalar(1, t).ptr(),
                                          x_desc_.set(x), x.raw_data(), Scalar(0, t).ptr(), y_desc_.set(y),
                                          y.raw_data()));
}

void LRNPlan::backward(int size, double alpha, double beta, double k, const Tensor& x, const Tensor& y,
                       const Tensor& dy, const Tensor& dx) {
  tensor::cuda::DeviceGuard guard(x.device().index);
  desc_.set(static_cast<unsigned>(size), alpha, beta, k);
  const DType t = x.dtype();
  CUDNN_CHECK(cudnnLRNCrossChannelBackward(handle(), desc_.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, Scalar(1, t).ptr(),
                                           y_desc_.set(y), y.raw_data(), y_desc_.get(), dy.raw_data(), x_desc_.set(x),
                                           x.raw_data(), Scalar(0, t).ptr(), x_desc_.get(), dx.raw_data()));
}

}  // namespace cudnn
