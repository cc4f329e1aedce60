// lrn.cpp
#include "cudnn/ops/lrn.h"

#include "cudnn/core/Handle.h"
#include "cudnn/kernels/LRN.h"
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

// Note [16-bit LRN]
// cuDNN 9.14 on the H100 answered CUDNN_STATUS_NOT_SUPPORTED to cross-channel LRN on 16-bit
// tensors (float16 first, in the twin test), which other builds may run. Rather than fail (or keep the layer in
// nn), a refused 16-bit dtype is computed in float32 copies of its operands, which is also
// what as_input_f32 means for convolutions; the result is rounded once, into the caller's
// dtype. The refusal is remembered per plan and dtype, so steady state makes one cuDNN call.
// The backward is our kernel in every dtype (Note [LRN backward] in cudnn/kernels/LRN.cu).

bool LRNPlan::computes_in_float32(DType dtype) const {
  return (refused_dtypes_ >> static_cast<unsigned>(dtype)) & 1u;
}

void LRNPlan::refuse(cudnnStatus_t status, DType dtype, const char* call) {
  const bool sixteen_bit = dtype == DType::Float16 || dtype == DType::BFloat16;
  if (status != CUDNN_STATUS_NOT_SUPPORTED || !sixteen_bit) detail::throw_cudnn_error(status, call, __FILE__, __LINE__);
  refused_dtypes_ |= 1u << static_cast<unsigned>(dtype);
}

void LRNPlan::forward(int size, double alpha, double beta, double k, const Tensor& x, const Tensor& y) {
  tensor::cuda::DeviceGuard guard(x.device().index);
  desc_.set(static_cast<unsigned>(size), alpha, beta, k);
  const DType t = x.dtype();
  if (!computes_in_float32(t)) {
    const cudnnStatus_t status =
        cudnnLRNCrossChannelForward(handle(), desc_.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, Scalar(1, t).ptr(),
                                    x_desc_.set(x), x.raw_data(), Scalar(0, t).ptr(), y_desc_.set(y), y.raw_data());
    if (status == CUDNN_STATUS_SUCCESS) return;
    refuse(status, t, "cudnnLRNCrossChannelForward");
  }
  const Tensor x32 = x.to(DType::Float32);
  Tensor y32 = tensor::empty(y.sizes(), DType::Float32, y.device());
  forward(size, alpha, beta, k, x32, y32);
  Tensor(y).copy_(y32);  // a handle on the caller's storage
}

// Ours, for every dtype: Note [LRN backward] in cudnn/kernels/LRN.cu.
void LRNPlan::backward(int size, double alpha, double beta, double k, const Tensor& x, const Tensor& dy,
                       const Tensor& dx) {
  kernels::lrn_backward(x, dy, dx, size, alpha, beta, k);
}

}  // namespace cudnn
