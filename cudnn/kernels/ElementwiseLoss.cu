// ElementwiseLoss.cu
#include "cudnn/kernels/ElementwiseLoss.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cudnn/kernels/Dispatch.h"
#include "tensor/cuda/BlockFold.cuh"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

template <class T>
__device__ inline double widen(T v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return static_cast<double>(static_cast<float>(v));
}

template <class T>
__device__ inline T narrow_to(double v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return T(static_cast<float>(v));
}

// Each block folds its elements' losses in a fixed order into partial[blockIdx.x].
template <class T>
__global__ void loss_kernel(nn::kernels::ElementLossParams p, const T* x, const T* y, const double* w, int64_t wn,
                            const double* pw, int64_t pwn, int64_t n, double* partial) {
  __shared__ double sum_s[kThreads];
  double s = 0;
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) {
    s += nn::kernels::element_loss(p, widen(x[i]), widen(y[i]), w ? w[i % wn] : 1.0, pw ? pw[i % pwn] : 1.0);
  }
  sum_s[threadIdx.x] = s;
  tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) { sum_s[i] += sum_s[j]; });
  if (threadIdx.x == 0) partial[blockIdx.x] = sum_s[0];
}

template <class T>
__global__ void grad_kernel(nn::kernels::ElementLossParams p, const T* x, const T* y, const double* w, int64_t wn,
                            const double* pw, int64_t pwn, int64_t n, double scale, T* dx) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double g =
        nn::kernels::element_grad(p, widen(x[i]), widen(y[i]), w ? w[i % wn] : 1.0, pw ? pw[i % pwn] : 1.0);
    dx[i] = narrow_to<T>(g * scale);
  }
}

int blocks_for(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

const double* ptr_or_null(const tensor::Tensor& t) { return t.defined() ? t.data<double>() : nullptr; }

}  // namespace

double elementwise_loss_sum(const nn::kernels::ElementLossParams& p, const tensor::Tensor& x, const tensor::Tensor& y,
                            const tensor::Tensor& w, const tensor::Tensor& pw) {
  const int64_t n = x.numel();
  if (n == 0) return 0;
  const int blocks = blocks_for(n);
  const tensor::Tensor partial = tensor::empty({blocks}, tensor::DType::Float64, x.device());
  launch_floating("cudnn::kernels::elementwise_loss_sum", x, [&]<class T, class A>(cudaStream_t stream) {
    loss_kernel<T><<<blocks, kThreads, 0, stream>>>(p, x.data<T>(), y.data<T>(), ptr_or_null(w),
                                                    w.defined() ? w.numel() : 1, ptr_or_null(pw),
                                                    pw.defined() ? pw.numel() : 1, n, partial.data<double>());
  });
  // the partial sums are added on the host in block order: the same bits on every run
  const std::vector<double> parts = partial.cpu().to_vector<double>();
  double s = 0;
  for (double v : parts) s += v;
  return s;
}

void elementwise_loss_grad(const nn::kernels::ElementLossParams& p, const tensor::Tensor& x, const tensor::Tensor& y,
                           const tensor::Tensor& w, const tensor::Tensor& pw, double scale, const tensor::Tensor& dx) {
  const int64_t n = x.numel();
  if (n == 0) return;
  launch_floating("cudnn::kernels::elementwise_loss_grad", x, [&]<class T, class A>(cudaStream_t stream) {
    grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(p, x.data<T>(), y.data<T>(), ptr_or_null(w),
                                                           w.defined() ? w.numel() : 1, ptr_or_null(pw),
                                                           pw.defined() ? pw.numel() : 1, n, scale, dx.data<T>());
  });
}

}  // namespace cudnn::kernels
