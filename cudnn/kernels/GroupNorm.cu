// GroupNorm.cu: see GroupNorm.h.
#include "cudnn/kernels/GroupNorm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cudnn/kernels/DeviceMath.cuh"
#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

__device__ inline float sqrt_of(float v) { return sqrtf(v); }
__device__ inline double sqrt_of(double v) { return sqrt(v); }

template <class A>
__device__ A block_sum(A v, A* shared) {
  return warp_block_reduce(
      v, [](A a, A b) { return a + b; }, A(0), shared);
}

// Threads per row block: a power of two from 32 to 256, about one per element of short rows.
int row_threads(int64_t cols) {
  int t = 32;
  while (t < 256 && t < cols) t *= 2;
  return t;
}
// Row blocks loop over the rows past the grid; element-wise kernels over the elements.
constexpr int64_t kMaxBlocks = int64_t{1} << 20;
constexpr int kThreads = 256;
unsigned blocks_for(int64_t work) { return static_cast<unsigned>(std::max<int64_t>(1, std::min(work, kMaxBlocks))); }
unsigned element_blocks(int64_t n) { return blocks_for((n + kThreads - 1) / kThreads); }

template <class T>
const T* data_or_null(const tensor::Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr;
}

template <class T, class A>
__global__ void statistics_kernel(const T* x, int64_t rows, int64_t cols, A eps, A* mean, A* rstd, A* var) {
  __shared__ A shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    A s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += static_cast<A>(xr[j]);
    const A m = block_sum(s, shared) / static_cast<A>(cols);
    A v = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const A d = static_cast<A>(xr[j]) - m;
      v += d * d;
    }
    const A biased = block_sum(v, shared) / static_cast<A>(cols);
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = A(1) / sqrt_of(biased + eps);
      if (var) var[r] = biased;
    }
  }
}

// One thread a channel, the samples in order.
template <class T, class A>
__global__ void update_running_kernel(const A* mean, const A* var, int64_t N, int64_t C, int64_t S, A momentum,
                                      T* runningMean, T* runningVar) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  A sm = 0, sv = 0;
  for (int64_t n = 0; n < N; ++n) {
    sm += mean[n * C + c];
    sv += var[n * C + c];
  }
  const A unbias = static_cast<A>(S) / static_cast<A>(S - 1);
  runningMean[c] = T((A(1) - momentum) * static_cast<A>(runningMean[c]) + momentum * (sm / static_cast<A>(N)));
  runningVar[c] = T((A(1) - momentum) * static_cast<A>(runningVar[c]) + momentum * (sv / static_cast<A>(N) * unbias));
}

template <class T, class A>
__global__ void running_statistics_kernel(const T* runningMean, const T* runningVar, int64_t N, int64_t C, A eps,
                                          A* mean, A* rstd) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < N * C;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % C;
    mean[i] = static_cast<A>(runningMean[c]);
    rstd[i] = A(1) / sqrt_of(static_cast<A>(runningVar[c]) + eps);
  }
}

template <class T, class A>
__global__ void apply_kernel(const T* x, GroupDims d, const A* mean, const A* rstd, const T* w, const T* b, T* y) {
  const int64_t total = d.N * d.C * d.S, Cg = d.C / d.G;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t nc = i / d.S, c = nc % d.C, r = (nc / d.C) * d.G + c / Cg;
    const A xhat = (static_cast<A>(x[i]) - mean[r]) * rstd[r];
    y[i] = T(w ? xhat * static_cast<A>(w[c]) + static_cast<A>(b[c]) : xhat);
  }
}

template <class T, class A>
__global__ void backward_input_kernel(const T* x, const T* dy, GroupDims d, const A* mean, const A* rstd, const T* w,
                                      T* dx) {
  __shared__ A shared[32];
  const int64_t Cg = d.C / d.G, rows = d.N * d.G, cols = Cg * d.S;
  const A n = static_cast<A>(cols);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* gr = dy + r * cols;
    T* dr = dx + r * cols;
    const int64_t c0 = (r % d.G) * Cg;
    const A m = mean[r], rs = rstd[r];
    A sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const A g = w ? static_cast<A>(gr[j]) * static_cast<A>(w[c0 + j / d.S]) : static_cast<A>(gr[j]);
      sg += g;
      sgx += g * (static_cast<A>(xr[j]) - m) * rs;
    }
    sg = block_sum(sg, shared);
    sgx = block_sum(sgx, shared);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const A g = w ? static_cast<A>(gr[j]) * static_cast<A>(w[c0 + j / d.S]) : static_cast<A>(gr[j]);
      const A xhat = (static_cast<A>(xr[j]) - m) * rs;
      dr[j] = T(rs * (g - sg / n - xhat * sgx / n));
    }
  }
}

// Statistics that do not depend on x (InstanceNorm's running ones): dx = rstd g, element-wise.
template <class T, class A>
__global__ void backward_input_fixed_kernel(const T* dy, GroupDims d, const A* rstd, const T* w, T* dx) {
  const int64_t total = d.N * d.C * d.S, Cg = d.C / d.G;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t nc = i / d.S, c = nc % d.C, r = (nc / d.C) * d.G + c / Cg;
    const A g = w ? static_cast<A>(dy[i]) * static_cast<A>(w[c]) : static_cast<A>(dy[i]);
    dx[i] = T(rstd[r] * g);
  }
}

// g = dy weight[c], element-wise (the channel of element i is i / S mod C).
template <class T, class A>
__global__ void scale_channels_kernel(const T* dy, GroupDims d, const T* w, T* g) {
  const int64_t total = d.N * d.C * d.S;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    g[i] = T(static_cast<A>(dy[i]) * static_cast<A>(w[(i / d.S) % d.C]));
  }
}

// The parameter sums, first pass: block (c, k) sums channel c over the samples of chunk k
// (each thread its positions in order, then the block's fixed-order sum) into
// partial[2][chunks][C] (dy xhat, then dy).
constexpr int64_t kMaxChunks = 64;

template <class T, class A>
__global__ void params_partial_kernel(const T* x, const T* dy, GroupDims d, const A* mean, const A* rstd,
                                      int64_t chunkN, A* partial) {
  __shared__ A shared[32];
  const int64_t c = blockIdx.x, k = blockIdx.y, chunks = gridDim.y, Cg = d.C / d.G;
  const int64_t begin = k * chunkN, end = begin + chunkN < d.N ? begin + chunkN : d.N;
  A a = 0, b = 0;
  for (int64_t n = begin; n < end; ++n) {
    const int64_t r = n * d.G + c / Cg;
    const A m = mean[r], rs = rstd[r];
    const T* xc = x + (n * d.C + c) * d.S;
    const T* gc = dy + (n * d.C + c) * d.S;
    for (int64_t i = threadIdx.x; i < d.S; i += blockDim.x) {
      const A g = static_cast<A>(gc[i]);
      a += g * (static_cast<A>(xc[i]) - m) * rs;
      b += g;
    }
  }
  a = block_sum(a, shared);
  b = block_sum(b, shared);
  if (threadIdx.x == 0) {
    partial[k * d.C + c] = a;
    partial[(chunks + k) * d.C + c] = b;
  }
}

// Second pass: one thread a channel sums the chunks in order and accumulates with scale.
template <class T, class A>
__global__ void params_final_kernel(const A* partial, int64_t chunks, int64_t C, A scale, T* gradWeight, T* gradBias) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  A a = 0, b = 0;
  for (int64_t k = 0; k < chunks; ++k) {
    a += partial[k * C + c];
    b += partial[(chunks + k) * C + c];
  }
  gradWeight[c] = T(static_cast<A>(gradWeight[c]) + scale * a);
  gradBias[c] = T(static_cast<A>(gradBias[c]) + scale * b);
}

bool empty(const GroupDims& d) { return d.N * d.C * d.S == 0; }

}  // namespace

void group_norm_statistics(const tensor::Tensor& x, const GroupDims& d, double eps, const tensor::Tensor& mean,
                           const tensor::Tensor& rstd, const tensor::Tensor& var) {
  if (empty(d)) return;
  const int64_t rows = d.N * d.G, cols = d.C / d.G * d.S;
  launch_floating("cudnn::kernels::group_norm_statistics", x, [&]<class T, class A>(cudaStream_t stream) {
    statistics_kernel<T, A><<<blocks_for(rows), row_threads(cols), 0, stream>>>(
        static_cast<const T*>(x.raw_data()), rows, cols, static_cast<A>(eps), static_cast<A*>(mean.raw_data()),
        static_cast<A*>(rstd.raw_data()), var.defined() ? static_cast<A*>(var.raw_data()) : nullptr);
  });
}

void instance_norm_update_running(const tensor::Tensor& mean, const tensor::Tensor& var, const GroupDims& d,
                                  double momentum, const tensor::Tensor& runningMean,
                                  const tensor::Tensor& runningVar) {
  if (d.N == 0 || d.C == 0) return;  // Note [Instance norm's running statistics]: an empty batch changes nothing
  launch_floating(
      "cudnn::kernels::instance_norm_update_running", runningMean, [&]<class T, class A>(cudaStream_t stream) {
        update_running_kernel<T, A><<<static_cast<unsigned>((d.C + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
            static_cast<const A*>(mean.raw_data()), static_cast<const A*>(var.raw_data()), d.N, d.C, d.S,
            static_cast<A>(momentum), static_cast<T*>(runningMean.raw_data()), static_cast<T*>(runningVar.raw_data()));
      });
}

void instance_norm_running_statistics(const tensor::Tensor& runningMean, const tensor::Tensor& runningVar,
                                      const GroupDims& d, double eps, const tensor::Tensor& mean,
                                      const tensor::Tensor& rstd) {
  if (d.N * d.C == 0) return;
  launch_floating(
      "cudnn::kernels::instance_norm_running_statistics", runningMean, [&]<class T, class A>(cudaStream_t stream) {
        running_statistics_kernel<T, A><<<element_blocks(d.N * d.C), kThreads, 0, stream>>>(
            static_cast<const T*>(runningMean.raw_data()), static_cast<const T*>(runningVar.raw_data()), d.N, d.C,
            static_cast<A>(eps), static_cast<A*>(mean.raw_data()), static_cast<A*>(rstd.raw_data()));
      });
}

void group_norm_apply(const tensor::Tensor& x, const GroupDims& d, const tensor::Tensor& mean,
                      const tensor::Tensor& rstd, const tensor::Tensor& weight, const tensor::Tensor& bias,
                      const tensor::Tensor& y) {
  if (empty(d)) return;
  launch_floating("cudnn::kernels::group_norm_apply", x, [&]<class T, class A>(cudaStream_t stream) {
    apply_kernel<T, A><<<element_blocks(d.N * d.C * d.S), kThreads, 0, stream>>>(
        static_cast<const T*>(x.raw_data()), d, static_cast<const A*>(mean.raw_data()),
        static_cast<const A*>(rstd.raw_data()), data_or_null<T>(weight), data_or_null<T>(bias),
        static_cast<T*>(y.raw_data()));
  });
}

void group_norm_backward_input(const tensor::Tensor& x, const tensor::Tensor& dy, const GroupDims& d,
                               const tensor::Tensor& mean, const tensor::Tensor& rstd, const tensor::Tensor& weight,
                               bool fixedStatistics, const tensor::Tensor& dx) {
  if (empty(d)) return;
  launch_floating("cudnn::kernels::group_norm_backward_input", x, [&]<class T, class A>(cudaStream_t stream) {
    if (fixedStatistics) {
      backward_input_fixed_kernel<T, A><<<element_blocks(d.N * d.C * d.S), kThreads, 0, stream>>>(
          static_cast<const T*>(dy.raw_data()), d, static_cast<const A*>(rstd.raw_data()), data_or_null<T>(weight),
          static_cast<T*>(dx.raw_data()));
      return;
    }
    backward_input_kernel<T, A><<<blocks_for(d.N * d.G), row_threads(d.C / d.G * d.S), 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(dy.raw_data()), d,
        static_cast<const A*>(mean.raw_data()), static_cast<const A*>(rstd.raw_data()), data_or_null<T>(weight),
        static_cast<T*>(dx.raw_data()));
  });
}

void group_norm_scale_channels(const tensor::Tensor& dy, const GroupDims& d, const tensor::Tensor& weight,
                               const tensor::Tensor& g) {
  if (empty(d)) return;
  launch_floating("cudnn::kernels::group_norm_scale_channels", dy, [&]<class T, class A>(cudaStream_t stream) {
    scale_channels_kernel<T, A><<<element_blocks(d.N * d.C * d.S), kThreads, 0, stream>>>(
        static_cast<const T*>(dy.raw_data()), d, static_cast<const T*>(weight.raw_data()),
        static_cast<T*>(g.raw_data()));
  });
}

void group_norm_backward_params(const tensor::Tensor& x, const tensor::Tensor& dy, const GroupDims& d,
                                const tensor::Tensor& mean, const tensor::Tensor& rstd,
                                const tensor::Tensor& gradWeight, const tensor::Tensor& gradBias, double scale) {
  if (empty(d)) return;  // nothing to add (nn adds nothing either)
  // chunks depend on the shape alone, so the sums' order (and bits) do too
  const int64_t chunkN = (d.N + kMaxChunks - 1) / kMaxChunks;
  const int64_t chunks = (d.N + chunkN - 1) / chunkN;
  launch_floating("cudnn::kernels::group_norm_backward_params", x, [&]<class T, class A>(cudaStream_t stream) {
    const tensor::Tensor partial = tensor::empty({2, chunks, d.C}, tensor::dtype_v<A>, x.device());
    const dim3 grid(static_cast<unsigned>(d.C), static_cast<unsigned>(chunks));
    params_partial_kernel<T, A><<<grid, row_threads(d.S), 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(dy.raw_data()), d,
        static_cast<const A*>(mean.raw_data()), static_cast<const A*>(rstd.raw_data()), chunkN,
        static_cast<A*>(partial.raw_data()));
    CUDA_CHECK_LAUNCH("cudnn::kernels::group_norm_backward_params (partial sums)");
    params_final_kernel<T, A><<<static_cast<unsigned>((d.C + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        static_cast<const A*>(partial.raw_data()), chunks, d.C, static_cast<A>(scale),
        static_cast<T*>(gradWeight.raw_data()), static_cast<T*>(gradBias.raw_data()));
  });
}

}  // namespace cudnn::kernels
