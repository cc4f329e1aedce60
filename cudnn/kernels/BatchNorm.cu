// BatchNorm.cu
#include "cudnn/kernels/BatchNorm.h"

#include <cuda_runtime.h>

#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/BlockFold.cuh"
#include "tensor/cuda/CudaCheck.h"
#include "tensor/cuda/Pack.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 256;

template <class T>
__device__ inline double widen(T v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return static_cast<double>(static_cast<float>(v));
}
template <class T>
__device__ inline T narrow(double v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return T(static_cast<float>(v));
}

// One block per channel (blockIdx.x).
template <class T, class P>
__global__ void eval_backward_kernel(const T* x, const T* dy, T* dx, BatchNormSizes s, const P* weight, const P* mean,
                                     const P* var, double eps, P* gradWeight, P* gradBias, double scale) {
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

// One block per channel (blockIdx.x); x is read only for a channel whose mean increment is not
// finite (uniform across the block).
template <class T, class P>
__global__ void fold_running_stats_kernel(const T* x, BatchNormSizes s, P* increments, P* running_mean, P* running_var,
                                          double factor, int64_t* count) {
  if (count && blockIdx.x == 0 && threadIdx.x == 0) *count += 1;  // Note [The count in the fold]
  __shared__ double partial[kThreads];
  const int64_t c = blockIdx.x;
  const double mean_increment = static_cast<double>(increments[c]);
  double mean_term = mean_increment;
  if (!isfinite(mean_increment)) {
    double sum = 0;
    const int64_t total = s.N * s.S;
    for (int64_t i = threadIdx.x; i < total; i += kThreads) {
      sum += widen(x[(i / s.S) * s.strideN + c * s.strideC + (i % s.S) * s.strideS]);
    }
    partial[threadIdx.x] = sum;
    tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) { partial[i] += partial[j]; });
    mean_term = factor * (partial[0] / static_cast<double>(total));
  }
  if (threadIdx.x == 0) {
    running_mean[c] = static_cast<P>((1 - factor) * static_cast<double>(running_mean[c]) + mean_term);
    running_var[c] =
        static_cast<P>((1 - factor) * static_cast<double>(running_var[c]) + static_cast<double>(increments[s.C + c]));
    increments[c] = P(0);
    increments[s.C + c] = P(0);
  }
}

// A pack of V elements of channels-last y per thread (C % V == 0 keeps a pack in one position);
// a NaN sets its channel's flag. Reads y once and writes nothing else.
template <class T, int V>
__global__ void flag_nan_channels_kernel(const T* y, int64_t packs, int64_t C, int* flags) {
  const int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (p >= packs) return;
  const auto pack = reinterpret_cast<const tensor::cuda::Pack<T, V>*>(y)[p];
  for (int j = 0; j < V; ++j) {
    if (isnan(static_cast<float>(pack.v[j]))) atomicOr(&flags[(p * V + j) % C], 1);
  }
}

// The parameters of relu_backward_repair_kernel but the tensors.
template <class P>
struct ReluRepair {
  const int* flags;  // null: flag the channels whose statistics or parameters are not finite
  const P *gamma, *beta, *mean, *invstd;
  P *fresh_dgamma, *fresh_dbeta, *dgamma, *dbeta;
  double alpha, blend;
};

// One block per channel. A flagged channel gets nn's gradient of relu(bn(x) [+ z]) in double,
// dy' = dy where y > 0 else 0, over cuDNN's dx, dz and fresh parameter gradients; then every
// channel's fresh parameter gradients are blended in: d = blend * d + alpha * fresh.
template <class T, class P>
__global__ void relu_backward_repair_kernel(const T* x, const T* y, const T* dy, T* dx, T* dz, BatchNormSizes s,
                                            ReluRepair<P> r) {
  __shared__ double sum_g[kThreads], sum_gx[kThreads];
  const int64_t c = blockIdx.x;
  const double m = static_cast<double>(r.mean[c]), is = static_cast<double>(r.invstd[c]);
  const bool flagged = r.flags ? r.flags[c] != 0
                               : !(isfinite(m) && isfinite(is) && isfinite(static_cast<double>(r.gamma[c])) &&
                                   isfinite(static_cast<double>(r.beta[c])));
  if (flagged) {  // uniform across the block
    const int64_t total = s.N * s.S;
    auto at = [&](int64_t i) { return (i / s.S) * s.strideN + c * s.strideC + (i % s.S) * s.strideS; };
    auto masked = [&](int64_t idx) { return widen(y[idx]) > 0 ? widen(dy[idx]) : 0.0; };
    double a = 0, b = 0;
    for (int64_t i = threadIdx.x; i < total; i += kThreads) {
      const int64_t idx = at(i);
      const double g = masked(idx);
      if (dz) dz[idx] = narrow<T>(g);
      a += g;
      b += g * (widen(x[idx]) - m) * is;
    }
    sum_g[threadIdx.x] = a;
    sum_gx[threadIdx.x] = b;
    tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) {
      sum_g[i] += sum_g[j];
      sum_gx[i] += sum_gx[j];
    });
    const double mean_g = sum_g[0] / static_cast<double>(total), mean_gx = sum_gx[0] / static_cast<double>(total);
    const double k = static_cast<double>(r.gamma[c]) * is;
    for (int64_t i = threadIdx.x; i < total; i += kThreads) {
      const int64_t idx = at(i);
      dx[idx] = narrow<T>(k * (masked(idx) - mean_g - (widen(x[idx]) - m) * is * mean_gx));
    }
    if (threadIdx.x == 0) {
      r.fresh_dgamma[c] = static_cast<P>(sum_gx[0]);
      r.fresh_dbeta[c] = static_cast<P>(sum_g[0]);
    }
  }
  if (threadIdx.x == 0) {
    // blend 0 overwrites, whatever the old value held (NaN included)
    const double old_g = r.blend == 0 ? 0.0 : r.blend * static_cast<double>(r.dgamma[c]);
    const double old_b = r.blend == 0 ? 0.0 : r.blend * static_cast<double>(r.dbeta[c]);
    r.dgamma[c] = static_cast<P>(old_g + r.alpha * static_cast<double>(r.fresh_dgamma[c]));
    r.dbeta[c] = static_cast<P>(old_b + r.alpha * static_cast<double>(r.fresh_dbeta[c]));
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

void batch_norm_flag_nan_channels(const tensor::Tensor& y, int64_t C, const tensor::Tensor& flags) {
  tensor::Tensor(flags).zero_();
  const int64_t n = y.numel();
  if (n == 0) return;
  launch_floating("batch_norm_flag_nan_channels", y, [&]<class T, class A>(cudaStream_t stream) {
    // a 16-byte pack where it stays in one position (C % V == 0), else one element a thread
    constexpr int V = tensor::cuda::kPack16<T>;
    const bool packed = C % V == 0 && reinterpret_cast<uintptr_t>(y.raw_data()) % 16 == 0;
    const int64_t packs = packed ? n / V : n;
    const auto blocks = static_cast<unsigned>((packs + kThreads - 1) / kThreads);
    const auto* data = static_cast<const T*>(y.raw_data());
    auto* f = static_cast<int*>(flags.raw_data());
    if (packed) {
      flag_nan_channels_kernel<T, V><<<blocks, kThreads, 0, stream>>>(data, packs, C, f);
    } else {
      flag_nan_channels_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(data, packs, C, f);
    }
  });
}

void batch_norm_relu_backward_repair(const tensor::Tensor& x, const tensor::Tensor& y, const tensor::Tensor& dy,
                                     const tensor::Tensor& dx, const tensor::Tensor& dz, BatchNormSizes s,
                                     const tensor::Tensor& flags, const BatchNormParams& p, double alpha,
                                     double blend) {
  if (s.C == 0) return;
  launch_floating("batch_norm_relu_backward_repair", x, [&]<class T, class P>(cudaStream_t stream) {
    const ReluRepair<P> r{flags.defined() ? static_cast<const int*>(flags.raw_data()) : nullptr,
                          p.gamma.data<P>(),
                          p.beta.data<P>(),
                          p.save_mean.data<P>(),
                          p.save_invstd.data<P>(),
                          p.fresh_dgamma.data<P>(),
                          p.fresh_dbeta.data<P>(),
                          p.dgamma.data<P>(),
                          p.dbeta.data<P>(),
                          alpha,
                          blend};
    relu_backward_repair_kernel<T, P><<<static_cast<unsigned>(s.C), kThreads, 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(y.raw_data()), static_cast<const T*>(dy.raw_data()),
        static_cast<T*>(dx.raw_data()), dz.defined() ? static_cast<T*>(dz.raw_data()) : nullptr, s, r);
  });
}

void batch_norm_fold_running_stats(const tensor::Tensor& x, BatchNormSizes s, const tensor::Tensor& increments,
                                   const tensor::Tensor& running_mean, const tensor::Tensor& running_var, double factor,
                                   const tensor::Tensor& count) {
  if (count.defined() && (count.dtype() != tensor::DType::Int64 || count.numel() != 1 || count.device() != x.device())) {
    throw tensor::Error("cudnn::kernels::batch_norm_fold_running_stats: expected the count as an int64 scalar on " +
                        x.device().str() + ", got " + count.description());
  }
  if (s.C == 0) {
    if (count.defined()) tensor::Tensor(count).add_(1.0);
    return;
  }
  launch_floating("batch_norm_fold_running_stats", x, [&]<class T, class P>(cudaStream_t stream) {
    fold_running_stats_kernel<T, P><<<static_cast<unsigned>(s.C), kThreads, 0, stream>>>(
        static_cast<const T*>(x.raw_data()), s, increments.data<P>(), running_mean.data<P>(), running_var.data<P>(),
        factor, count.defined() ? static_cast<int64_t*>(count.raw_data()) : nullptr);
  });
}

}  // namespace cudnn::kernels
