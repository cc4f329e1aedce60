// BatchNorm.cu
#include "cudnn/kernels/BatchNorm.h"

#include <cuda_runtime.h>

#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/BlockFold.cuh"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 256;

template <class T>
__device__ inline double widen(T v) {
  if constexpr (sizeof(T) == 8) return v;
  else return static_cast<double>(static_cast<float>(v));
}
template <class T>
__device__ inline T narrow(double v) {
  if constexpr (sizeof(T) == 8) return v;
  else return T(static_cast<float>(v));
}

// One block per channel (blockIdx.x).
template <class T, class P>
__global__ void eval_backward_kernel(const T* x, const T* dy, T* dx, BatchNormSizes s, const P* weight,
                                     const P* mean, const P* var, double eps, P* gradWeight, P* gradBias,
                                     double scale) {
  __shared__ double sum_dy[kThreads], sum_dyx[kThreads];
  const int64_t c = blockIdx.x;
  const double invstd = 1.0 / sqrt(static_cast<double>(var[c]) + eps);
  const double dx_factor = (weight ? static_cast<double>(weight[c]) : 1.0) * invstd;
  const double m = static_cast<double>(mean[c]);
  const bool params = gradWeight != nullptr;
  double a = 0, b = 0;
  const int64_t total = s.N * s.S;
  for (int64_t i = threadIdx.x; i < total; i += kThreads) {
    const int64_t idx = (i / s.S) * s.strideN + c * s.strideC + (i % s.S) * s.strideS;
    const double g = widen(dy[idx]);
    if (dx) dx[idx] = narrow<T>(g * dx_factor);
    if (params) {
      a += g;
      b += g * (widen(x[idx]) - m);
    }
  }
  if (!params) return;  // uniform across the block: no thread waits at a barrier below
  sum_dy[threadIdx.x] = a;
  sum_dyx[threadIdx.x] = b;
  tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) {
    sum_dy[i] += sum_dy[j];
    sum_dyx[i] += sum_dyx[j];
  });
  if (threadIdx.x == 0) {
    gradWeight[c] = static_cast<P>(static_cast<double>(gradWeight[c]) + scale * sum_dyx[0] * invstd);
    gradBias[c] = static_cast<P>(static_cast<double>(gradBias[c]) + scale * sum_dy[0]);
  }
}

// One block per channel (blockIdx.x); channels whose running mean is finite return at once.
template <class T, class P>
__global__ void repair_running_mean_kernel(const T* x, BatchNormSizes s, const P* previous, P* running_mean,
                                           double factor) {
  __shared__ double partial[kThreads];
  const int64_t c = blockIdx.x;
  if (isfinite(static_cast<double>(running_mean[c]))) return;  // uniform across the block
  double sum = 0;
  const int64_t total = s.N * s.S;
  for (int64_t i = threadIdx.x; i < total; i += kThreads) {
    sum += widen(x[(i / s.S) * s.strideN + c * s.strideC + (i % s.S) * s.strideS]);
  }
  partial[threadIdx.x] = sum;
  tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) { partial[i] += partial[j]; });
  if (threadIdx.x == 0) {
    const double mean = partial[0] / static_cast<double>(total);
    running_mean[c] = static_cast<P>((1 - factor) * static_cast<double>(previous[c]) + factor * mean);
  }
}

template <class P>
const P* ptr_or_null(const tensor::Tensor& t) {
  return t.defined() ? t.data<P>() : nullptr;
}

}  // namespace

void batch_norm_eval_backward(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& dx,
                              BatchNormSizes s, const tensor::Tensor& weight, const tensor::Tensor& running_mean,
                              const tensor::Tensor& running_var, double eps, const tensor::Tensor& gradWeight,
                              const tensor::Tensor& gradBias, double scale) {
  if (s.N * s.C * s.S == 0 || (!dx.defined() && !gradWeight.defined())) return;
  if (s.strideN == 0 && s.strideC == 0 && s.strideS == 0) {
    s.strideN = s.C * s.S;
    s.strideC = s.S;
    s.strideS = 1;
  }
  // P, the parameters' and statistics' type, is the type T computes in: float32 but for float64
  launch_floating("batch_norm_eval_backward", x, [&]<class T, class P>(cudaStream_t stream) {
    eval_backward_kernel<T, P><<<static_cast<unsigned>(s.C), kThreads, 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(dy.raw_data()),
        dx.defined() ? static_cast<T*>(dx.raw_data()) : nullptr, s, ptr_or_null<P>(weight), running_mean.data<P>(),
        running_var.data<P>(), eps, gradWeight.defined() ? gradWeight.data<P>() : nullptr,
        gradBias.defined() ? gradBias.data<P>() : nullptr, scale);
  });
}

void batch_norm_repair_running_mean(const tensor::Tensor& x, BatchNormSizes s, const tensor::Tensor& previous,
                                    const tensor::Tensor& running_mean, double factor) {
  if (s.N * s.C * s.S == 0) return;
  launch_floating("batch_norm_repair_running_mean", x, [&]<class T, class P>(cudaStream_t stream) {
    repair_running_mean_kernel<T, P><<<static_cast<unsigned>(s.C), kThreads, 0, stream>>>(
        static_cast<const T*>(x.raw_data()), s, previous.data<P>(), running_mean.data<P>(), factor);
  });
}

}  // namespace cudnn::kernels
