// RMSNorm.cu: see RMSNorm.h.
#include "cudnn/kernels/RMSNorm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cudnn/kernels/DeviceMath.cuh"
#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

using tensor::acc_t;

__device__ inline float rsqrt_of(float v) { return 1.0f / sqrtf(v); }
__device__ inline double rsqrt_of(double v) { return 1.0 / sqrt(v); }

struct Plus {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};

// Threads per row block: a power of two from 32 to 512, about one per 8 elements of a row (a
// Llama row of 4096 gets 512).
int row_threads(int64_t cols) {
  int t = 32;
  while (t < 512 && t * 8 < cols) t *= 2;
  return t;
}

// Row blocks loop over the rows past the grid.
constexpr int64_t kMaxRowBlocks = int64_t{1} << 20;
unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(std::min(rows, kMaxRowBlocks)); }

template <class T, class A>
__global__ void forward_kernel(const T* x, int64_t rows, int64_t cols, const T* w, A eps, T* y, A* rstd) {
  __shared__ A shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    A ss = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A v = static_cast<A>(xr[c]);
      ss += v * v;
    }
    const A rs = rsqrt_of(warp_block_reduce(ss, Plus{}, A(0), shared) / static_cast<A>(cols) + eps);
    if (threadIdx.x == 0) rstd[r] = rs;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A xhat = static_cast<A>(xr[c]) * rs;
      yr[c] = T(w ? xhat * static_cast<A>(w[c]) : xhat);  // See Note [RMSNorm's rounding]
    }
  }
}

// Note [RMSNorm's row in registers]
// forward_kernel reads a row twice (the sum of squares, then the normalisation). For rows of at
// most kMaxPerThread values a thread, each thread loads its values once into registers instead:
// the same elements in the same order (c = threadIdx.x + i blockDim.x, ascending i), the lanes
// past the row adding 0, so the sums and outputs are forward_kernel's to the bit. Llama's rows
// (4096 and 8192) are 8 and 16 values a thread of 512 threads.
constexpr int kMaxPerThread = 16;

template <class T, class A, int kPer>
__global__ void forward_cached_kernel(const T* x, int64_t rows, int64_t cols, const T* w, A eps, T* y, A* rstd) {
  __shared__ A shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    A v[kPer];
    T wv[kPer];  // the weight, loaded with the row rather than after the reduction: a decode
                 // step's one row otherwise waits for a second trip to memory
    A ss = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int64_t c = threadIdx.x + static_cast<int64_t>(i) * blockDim.x;
      v[i] = c < cols ? static_cast<A>(xr[c]) : A(0);
      if (w && c < cols) wv[i] = w[c];
      ss += v[i] * v[i];
    }
    const A rs = rsqrt_of(warp_block_reduce(ss, Plus{}, A(0), shared) / static_cast<A>(cols) + eps);
    if (threadIdx.x == 0) rstd[r] = rs;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int64_t c = threadIdx.x + static_cast<int64_t>(i) * blockDim.x;
      if (c < cols) {
        const A xhat = v[i] * rs;
        yr[c] = T(w ? xhat * static_cast<A>(wv[i]) : xhat);  // See Note [RMSNorm's rounding]
      }
    }
  }
}

template <class T, class A>
__global__ void backward_input_kernel(const T* x, const T* dy, int64_t rows, int64_t cols, const T* w, const A* rstd,
                                      T* dx) {
  __shared__ A shared[32];
  const A n = static_cast<A>(cols);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* gr = dy + r * cols;
    T* dr = dx + r * cols;
    const A rs = rstd[r];
    A sgx = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A g = w ? static_cast<A>(gr[c]) * static_cast<A>(w[c]) : static_cast<A>(gr[c]);
      sgx += g * (static_cast<A>(xr[c]) * rs);
    }
    sgx = warp_block_reduce(sgx, Plus{}, A(0), shared);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A g = w ? static_cast<A>(gr[c]) * static_cast<A>(w[c]) : static_cast<A>(gr[c]);
      dr[c] = T(rs * (g - static_cast<A>(xr[c]) * rs * sgx / n));
    }
  }
}

// The weight's sums, first pass: block (kTileCols x kTileRows threads) sums its tile of columns
// over chunk blockIdx.y of the rows (each thread its rows in order, then the kTileRows partial
// sums in order) into partial[chunks][cols].
constexpr int kTileCols = 32, kTileRows = 8;
constexpr int64_t kMaxChunks = 64, kMinChunkRows = 64;

template <class T, class A>
__global__ void params_partial_kernel(const T* x, const T* dy, int64_t rows, int64_t cols, const A* rstd,
                                      int64_t chunkRows, A* partial) {
  __shared__ A sw[kTileRows][kTileCols + 1];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileCols + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * chunkRows;
  const int64_t end = begin + chunkRows < rows ? begin + chunkRows : rows;
  A a = 0;
  if (c < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kTileRows) {
      a += static_cast<A>(dy[r * cols + c]) * (static_cast<A>(x[r * cols + c]) * rstd[r]);
    }
  }
  sw[threadIdx.y][threadIdx.x] = a;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int k = 1; k < kTileRows; ++k) a += sw[k][threadIdx.x];
    partial[blockIdx.y * cols + c] = a;
  }
}

// Second pass: one thread per column sums the chunks in order and accumulates with scale.
template <class T, class A>
__global__ void params_final_kernel(const A* partial, int64_t chunks, int64_t cols, A scale, T* gradWeight) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  A a = 0;
  for (int64_t k = 0; k < chunks; ++k) a += partial[k * cols + c];
  gradWeight[c] = T(static_cast<A>(gradWeight[c]) + scale * a);
}

template <class T>
const T* data_or_null(const tensor::Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr;
}

}  // namespace

void rms_norm_forward(const tensor::Tensor& x, int64_t rows, int64_t cols, const tensor::Tensor& weight, double eps,
                      const tensor::Tensor& y, const tensor::Tensor& rstd) {
  if (rows == 0 || cols == 0) return;
  const int threads = row_threads(cols);
  const int64_t per = (cols + threads - 1) / threads;
  launch_floating("cudnn::kernels::rms_norm_forward", x, [&]<class T, class A>(cudaStream_t stream) {
    const T* xs = static_cast<const T*>(x.raw_data());
    const T* ws = data_or_null<T>(weight);
    T* ys = static_cast<T*>(y.raw_data());
    A* rs = static_cast<A*>(rstd.raw_data());
    const auto cached = [&]<int kPer>() {  // Note [RMSNorm's row in registers]
      forward_cached_kernel<T, A, kPer>
          <<<row_blocks(rows), threads, 0, stream>>>(xs, rows, cols, ws, static_cast<A>(eps), ys, rs);
    };
    if (per <= 1) return cached.template operator()<1>();
    if (per <= 2) return cached.template operator()<2>();
    if (per <= 4) return cached.template operator()<4>();
    if (per <= 8) return cached.template operator()<8>();
    if (per <= kMaxPerThread) return cached.template operator()<kMaxPerThread>();
    forward_kernel<T, A><<<row_blocks(rows), threads, 0, stream>>>(xs, rows, cols, ws, static_cast<A>(eps), ys, rs);
  });
}

void rms_norm_backward_input(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                             const tensor::Tensor& weight, const tensor::Tensor& rstd, const tensor::Tensor& dx) {
  if (rows == 0 || cols == 0) return;
  launch_floating("cudnn::kernels::rms_norm_backward_input", x, [&]<class T, class A>(cudaStream_t stream) {
    backward_input_kernel<T, A><<<row_blocks(rows), row_threads(cols), 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(dy.raw_data()), rows, cols, data_or_null<T>(weight),
        static_cast<const A*>(rstd.raw_data()), static_cast<T*>(dx.raw_data()));
  });
}

void rms_norm_backward_params(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                              const tensor::Tensor& rstd, const tensor::Tensor& gradWeight, double scale) {
  if (rows == 0 || cols == 0) return;  // nothing to add (nn adds scale * 0)
  // chunks depend on the shape alone, so the sums' order (and bits) do too
  const int64_t chunkRows = std::max(kMinChunkRows, (rows + kMaxChunks - 1) / kMaxChunks);
  const int64_t chunks = (rows + chunkRows - 1) / chunkRows;
  launch_floating("cudnn::kernels::rms_norm_backward_params", x, [&]<class T, class A>(cudaStream_t stream) {
    const tensor::Tensor partial = tensor::empty({chunks, cols}, tensor::dtype_v<A>, x.device());
    const dim3 grid(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols), static_cast<unsigned>(chunks));
    params_partial_kernel<T, A><<<grid, dim3(kTileCols, kTileRows), 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(dy.raw_data()), rows, cols,
        static_cast<const A*>(rstd.raw_data()), chunkRows, static_cast<A*>(partial.raw_data()));
    CUDA_CHECK_LAUNCH("cudnn::kernels::rms_norm_backward_params (partial sums)");
    constexpr int kThreads = 256;
    params_final_kernel<T, A><<<static_cast<unsigned>((cols + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        static_cast<const A*>(partial.raw_data()), chunks, cols, static_cast<A>(scale),
        static_cast<T*>(gradWeight.raw_data()));
  });
}

}  // namespace cudnn::kernels
