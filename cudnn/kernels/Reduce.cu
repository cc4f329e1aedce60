// Reduce.cu: see Reduce.h.
#include "cudnn/kernels/Reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "cudnn/kernels/DeviceMath.cuh"
#include "cudnn/kernels/Dispatch.h"
#include "tensor/cuda/BlockFold.cuh"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kBlockPerOutputFrom = 256;  // n at which an inner = 1 reduction takes a block per output

unsigned grid_for(int64_t work) {
  return static_cast<unsigned>(std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, 65535));
}

template <class A>
__device__ bool is_nan(A v) {
  return v != v;
}

// The extremum so far and its index (-1: none yet): a NaN wins, the lower index on a tie.
template <class A>
struct Best {
  A value;
  int64_t index;
};

template <class A>
__device__ Best<A> better(bool max, Best<A> a, Best<A> b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  const bool an = is_nan(a.value), bn = is_nan(b.value);
  if (an || bn) {
    if (an && bn) return a.index <= b.index ? a : b;
    return an ? a : b;
  }
  if (a.value == b.value) return a.index <= b.index ? a : b;
  return (max ? a.value > b.value : a.value < b.value) ? a : b;
}

// ---- reductions over [outer x n x inner]

template <class T, class A>
__global__ void sum_thread_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool mean) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outer * inner;
       o += int64_t(gridDim.x) * blockDim.x) {
    const T* p = x + (o / inner) * n * inner + o % inner;
    A acc = A(0);
    for (int64_t k = 0; k < n; ++k) acc += static_cast<A>(p[k * inner]);
    y[o] = T(mean ? acc / A(n) : acc);
  }
}

template <class T, class A>
__global__ void __launch_bounds__(kThreads) sum_block_kernel(const T* x, T* y, int64_t outputs, int64_t n, bool mean) {
  __shared__ A shared[kThreads];
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    A acc = A(0);
    for (int64_t k = threadIdx.x; k < n; k += kThreads) acc += static_cast<A>(x[o * n + k]);
    shared[threadIdx.x] = acc;
    tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) { shared[i] += shared[j]; });
    if (threadIdx.x == 0) y[o] = T(mean ? shared[0] / A(n) : shared[0]);
    __syncthreads();
  }
}

template <class T, class A>
__global__ void extremum_thread_kernel(bool max, const T* x, T* y, int64_t* index, int64_t outer, int64_t n,
                                       int64_t inner) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outer * inner;
       o += int64_t(gridDim.x) * blockDim.x) {
    const T* p = x + (o / inner) * n * inner + o % inner;
    Best<A> best{A(0), -1};
    for (int64_t k = 0; k < n; ++k) best = better(max, best, Best<A>{static_cast<A>(p[k * inner]), k});
    y[o] = p[best.index * inner];  // the input's own bits
    index[o] = best.index;
  }
}

template <class T, class A>
__global__ void __launch_bounds__(kThreads)
    extremum_block_kernel(bool max, const T* x, T* y, int64_t* index, int64_t outputs, int64_t n) {
  __shared__ A values[kThreads];
  __shared__ int64_t indices[kThreads];
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    Best<A> best{A(0), -1};
    for (int64_t k = threadIdx.x; k < n; k += kThreads)
      best = better(max, best, Best<A>{static_cast<A>(x[o * n + k]), k});
    values[threadIdx.x] = best.value;
    indices[threadIdx.x] = best.index;
    tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) {
      const Best<A> b = better(max, Best<A>{values[i], indices[i]}, Best<A>{values[j], indices[j]});
      values[i] = b.value;
      indices[i] = b.index;
    });
    if (threadIdx.x == 0) {
      y[o] = x[o * n + indices[0]];
      index[o] = indices[0];
    }
    __syncthreads();
  }
}

template <class T, class A>
__global__ void sum_backward_kernel(const T* dy, T* dx, int64_t total, int64_t n, int64_t inner, bool mean) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e / (n * inner), i = e % inner;
    const T g = dy[o * inner + i];
    dx[e] = mean ? T(static_cast<A>(g) / A(n)) : g;
  }
}

template <class T>
__global__ void extremum_backward_kernel(const T* dy, const int64_t* index, T* dx, int64_t total, int64_t n,
                                         int64_t inner) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e / (n * inner), k = (e / inner) % n, i = e % inner;
    dx[e] = index[o * inner + i] == k ? dy[o * inner + i] : T(tensor::acc_t<T>(0));
  }
}

// ---- Normalize: one block per row of d entries (nn/Normalize.h)

template <class A>
__device__ A pow_of(A v, A e) {
  if constexpr (std::is_same_v<A, float>)
    return powf(v, e);
  else
    return pow(v, e);
}
template <class A>
__device__ A abs_of(A v) {
  if constexpr (std::is_same_v<A, float>)
    return fabsf(v);
  else
    return fabs(v);
}
template <class A>
__device__ A sqrt_of(A v) {
  if constexpr (std::is_same_v<A, float>)
    return sqrtf(v);
  else
    return sqrt(v);
}

// The row's norm (and normp = sum |x|^p + eps for a finite p, the argmax for p = inf), in
// every thread of the block; `sum` and `at` are the block's shared arrays.
template <class T, class A>
__device__ void row_norm(const T* x, int64_t d, A p, A eps, bool inf, A* sum, int64_t* at, A& norm, A& normp,
                         int64_t& argmax) {
  if (inf) {
    Best<A> best{A(0), -1};
    for (int64_t k = threadIdx.x; k < d; k += kThreads)
      best = better(true, best, Best<A>{abs_of(static_cast<A>(x[k])), k});
    sum[threadIdx.x] = best.value;
    at[threadIdx.x] = best.index;
    tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) {
      const Best<A> b = better(true, Best<A>{sum[i], at[i]}, Best<A>{sum[j], at[j]});
      sum[i] = b.value;
      at[i] = b.index;
    });
    argmax = at[0];
    norm = (argmax < 0 ? A(0) : sum[0]) + eps;
    normp = A(0);
  } else {
    A acc = A(0);
    for (int64_t k = threadIdx.x; k < d; k += kThreads) {
      const A v = static_cast<A>(x[k]);
      acc += p == A(2) ? v * v : (p == A(1) ? abs_of(v) : pow_of(abs_of(v), p));
    }
    sum[threadIdx.x] = acc;
    tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) { sum[i] += sum[j]; });
    normp = sum[0] + eps;
    norm = p == A(2) ? sqrt_of(normp) : (p == A(1) ? normp : pow_of(normp, A(1) / p));
    argmax = -1;
  }
  __syncthreads();  // slot 0 read by all before the arrays are reused
}

template <class T, class A>
__global__ void __launch_bounds__(kThreads)
    normalize_forward_kernel(const T* x, T* y, int64_t rows, int64_t d, A p, A eps, bool inf) {
  __shared__ A sum[kThreads];
  __shared__ int64_t at[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    A norm, normp;
    int64_t argmax;
    row_norm<T, A>(x + r * d, d, p, eps, inf, sum, at, norm, normp, argmax);
    for (int64_t k = threadIdx.x; k < d; k += kThreads) y[r * d + k] = T(static_cast<A>(x[r * d + k]) / norm);
  }
}

template <class T, class A>
__global__ void __launch_bounds__(kThreads)
    normalize_backward_kernel(const T* x, const T* dy, T* dx, int64_t rows, int64_t d, A p, A eps, bool inf, bool odd) {
  __shared__ A sum[kThreads];
  __shared__ int64_t at[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    const T* gr = dy + r * d;
    A norm, normp;
    int64_t argmax;
    row_norm<T, A>(xr, d, p, eps, inf, sum, at, norm, normp, argmax);
    A acc = A(0);  // x . dy
    for (int64_t k = threadIdx.x; k < d; k += kThreads) acc += static_cast<A>(xr[k]) * static_cast<A>(gr[k]);
    sum[threadIdx.x] = acc;
    tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) { sum[i] += sum[j]; });
    const A cross = sum[0];
    __syncthreads();
    for (int64_t k = threadIdx.x; k < d; k += kThreads) {
      const A v = static_cast<A>(xr[k]), g = static_cast<A>(gr[k]);
      A out;
      if (inf) {
        const A b = k == argmax ? v / norm * cross : A(0);
        out = (norm * g - b) / (norm * norm);
      } else {
        const A b = p == A(2) ? v : pow_of(abs_of(v) + (odd && p < A(2) ? eps : A(0)), p - A(2)) * v;
        out = (normp * g - b * cross) / (normp * norm);
      }
      dx[r * d + k] = T(out);
    }
  }
}

}  // namespace

void reduce_sum(const tensor::Tensor& x, const tensor::Tensor& y, int64_t outer, int64_t n, int64_t inner, bool mean) {
  if (outer * inner == 0) return;
  launch_floating("cudnn::kernels::reduce_sum", x, [&]<class T, class A>(cudaStream_t stream) {
    if (inner == 1 && n >= kBlockPerOutputFrom) {
      sum_block_kernel<T, A><<<static_cast<unsigned>(std::min<int64_t>(outer, 65535)), kThreads, 0, stream>>>(
          x.data<T>(), y.data<T>(), outer, n, mean);
    } else {
      sum_thread_kernel<T, A>
          <<<grid_for(outer * inner), kThreads, 0, stream>>>(x.data<T>(), y.data<T>(), outer, n, inner, mean);
    }
  });
}

void reduce_sum_backward(const tensor::Tensor& dy, const tensor::Tensor& dx, int64_t outer, int64_t n, int64_t inner,
                         bool mean) {
  const int64_t total = outer * n * inner;
  if (total == 0) return;
  launch_floating("cudnn::kernels::reduce_sum_backward", dx, [&]<class T, class A>(cudaStream_t stream) {
    sum_backward_kernel<T, A>
        <<<grid_for(total), kThreads, 0, stream>>>(dy.data<T>(), dx.data<T>(), total, n, inner, mean);
  });
}

void reduce_extremum(bool max, const tensor::Tensor& x, const tensor::Tensor& y, const tensor::Tensor& index,
                     int64_t outer, int64_t n, int64_t inner) {
  if (outer * inner == 0) return;
  launch_floating("cudnn::kernels::reduce_extremum", x, [&]<class T, class A>(cudaStream_t stream) {
    if (inner == 1 && n >= kBlockPerOutputFrom) {
      extremum_block_kernel<T, A><<<static_cast<unsigned>(std::min<int64_t>(outer, 65535)), kThreads, 0, stream>>>(
          max, x.data<T>(), y.data<T>(), index.data<int64_t>(), outer, n);
    } else {
      extremum_thread_kernel<T, A><<<grid_for(outer * inner), kThreads, 0, stream>>>(
          max, x.data<T>(), y.data<T>(), index.data<int64_t>(), outer, n, inner);
    }
  });
}

void reduce_extremum_backward(const tensor::Tensor& dy, const tensor::Tensor& index, const tensor::Tensor& dx,
                              int64_t outer, int64_t n, int64_t inner) {
  const int64_t total = outer * n * inner;
  if (total == 0) return;
  launch_floating("cudnn::kernels::reduce_extremum_backward", dx, [&]<class T, class A>(cudaStream_t stream) {
    extremum_backward_kernel<T>
        <<<grid_for(total), kThreads, 0, stream>>>(dy.data<T>(), index.data<int64_t>(), dx.data<T>(), total, n, inner);
  });
}

void normalize_forward(const tensor::Tensor& x, const tensor::Tensor& y, int64_t rows, int64_t d, double p,
                       double eps) {
  if (rows * d == 0) return;
  const bool inf = p == std::numeric_limits<double>::infinity();
  launch_floating("cudnn::kernels::normalize_forward", x, [&]<class T, class A>(cudaStream_t stream) {
    normalize_forward_kernel<T, A><<<static_cast<unsigned>(std::min<int64_t>(rows, 65535)), kThreads, 0, stream>>>(
        x.data<T>(), y.data<T>(), rows, d, inf ? A(0) : A(p), A(eps), inf);
  });
}

void normalize_backward(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& dx, int64_t rows,
                        int64_t d, double p, double eps) {
  if (rows * d == 0) return;
  const bool inf = p == std::numeric_limits<double>::infinity();
  const bool odd = !inf && std::fmod(p, 2.0) != 0;
  launch_floating("cudnn::kernels::normalize_backward", x, [&]<class T, class A>(cudaStream_t stream) {
    normalize_backward_kernel<T, A><<<static_cast<unsigned>(std::min<int64_t>(rows, 65535)), kThreads, 0, stream>>>(
        x.data<T>(), dy.data<T>(), dx.data<T>(), rows, d, inf ? A(0) : A(p), A(eps), inf, odd);
  });
}

}  // namespace cudnn::kernels
