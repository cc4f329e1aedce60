// LayerNorm.cu: see LayerNorm.h.
#include "cudnn/kernels/LayerNorm.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

using tensor::acc_t;

__device__ inline float sqrt_of(float v) { return sqrtf(v); }
__device__ inline double sqrt_of(double v) { return sqrt(v); }

// Threads per row block: a power of two from 32 to 256, about one per element of short rows.
int row_threads(int64_t cols) {
  int t = 32;
  while (t < 256 && t < cols) t *= 2;
  return t;
}

// Row blocks loop over the rows past the grid (a grid of at most kMaxRowBlocks blocks).
constexpr int64_t kMaxRowBlocks = int64_t{1} << 20;

// The sum of v over the block, in a fixed order (warp shuffles, then the warps' sums), handed
// to every thread. `shared` holds 32 values; blockDim.x is a multiple of 32.
template <class A>
__device__ A block_sum(A v, A* shared) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : A(0);
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  const A total = shared[0];
  __syncthreads();  // shared is free for the next sum
  return total;
}

template <class T, class A>
__global__ void forward_kernel(const T* x, int64_t rows, int64_t cols, const T* w, const T* b, A eps, T* y, A* mean,
                               A* rstd) {
  __shared__ A shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    A s = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += static_cast<A>(xr[c]);
    const A m = block_sum(s, shared) / static_cast<A>(cols);
    A v = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A d = static_cast<A>(xr[c]) - m;
      v += d * d;
    }
    const A var = block_sum(v, shared) / static_cast<A>(cols);
    const A rs = A(1) / sqrt_of(var + eps);
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A xhat = (static_cast<A>(xr[c]) - m) * rs;
      yr[c] = T(w ? xhat * static_cast<A>(w[c]) + static_cast<A>(b[c]) : xhat);
    }
  }
}

template <class T, class A>
__global__ void backward_input_kernel(const T* x, const T* dy, int64_t rows, int64_t cols, const T* w, const A* mean,
                                      const A* rstd, T* dx) {
  __shared__ A shared[32];
  const A n = static_cast<A>(cols);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* gr = dy + r * cols;
    T* dr = dx + r * cols;
    const A m = mean[r], rs = rstd[r];
    A sg = 0, sgx = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A g = w ? static_cast<A>(gr[c]) * static_cast<A>(w[c]) : static_cast<A>(gr[c]);
      sg += g;
      sgx += g * (static_cast<A>(xr[c]) - m) * rs;
    }
    sg = block_sum(sg, shared);
    sgx = block_sum(sgx, shared);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A g = w ? static_cast<A>(gr[c]) * static_cast<A>(w[c]) : static_cast<A>(gr[c]);
      const A xhat = (static_cast<A>(xr[c]) - m) * rs;
      dr[c] = T(rs * (g - sg / n - xhat * sgx / n));
    }
  }
}

// The parameter sums, first pass: block (kTileCols x kTileRows threads) sums its tile of columns
// over chunk blockIdx.y of the rows (each thread its rows in order, then the kTileRows partial
// sums in order) into partial[2][chunks][cols] (dy xhat, then dy).
constexpr int kTileCols = 32, kTileRows = 8;
constexpr int64_t kMaxChunks = 64, kMinChunkRows = 64;

template <class T, class A>
__global__ void params_partial_kernel(const T* x, const T* dy, int64_t rows, int64_t cols, const A* mean, const A* rstd,
                                      int64_t chunkRows, A* partial) {
  __shared__ A sw[kTileRows][kTileCols + 1], sb[kTileRows][kTileCols + 1];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileCols + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * chunkRows;
  const int64_t end = begin + chunkRows < rows ? begin + chunkRows : rows;
  A a = 0, b = 0;
  if (c < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kTileRows) {
      const A g = static_cast<A>(dy[r * cols + c]);
      a += g * (static_cast<A>(x[r * cols + c]) - mean[r]) * rstd[r];
      b += g;
    }
  }
  sw[threadIdx.y][threadIdx.x] = a;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int k = 1; k < kTileRows; ++k) {
      a += sw[k][threadIdx.x];
      b += sb[k][threadIdx.x];
    }
    const int64_t chunks = gridDim.y;
    partial[blockIdx.y * cols + c] = a;
    partial[(chunks + blockIdx.y) * cols + c] = b;
  }
}

// Second pass: one thread per column sums the chunks in order and accumulates with scale.
template <class T, class A>
__global__ void params_final_kernel(const A* partial, int64_t chunks, int64_t cols, A scale, T* gradWeight,
                                    T* gradBias) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  A a = 0, b = 0;
  for (int64_t k = 0; k < chunks; ++k) {
    a += partial[k * cols + c];
    b += partial[(chunks + k) * cols + c];
  }
  gradWeight[c] = T(static_cast<A>(gradWeight[c]) + scale * a);
  gradBias[c] = T(static_cast<A>(gradBias[c]) + scale * b);
}

template <class T>
const T* data_or_null(const tensor::Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr;
}

unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(std::min(rows, kMaxRowBlocks)); }

}  // namespace

void layer_norm_forward(const tensor::Tensor& x, int64_t rows, int64_t cols, const tensor::Tensor& weight,
                        const tensor::Tensor& bias, double eps, const tensor::Tensor& y, const tensor::Tensor& mean,
                        const tensor::Tensor& rstd) {
  if (rows == 0 || cols == 0) return;
  launch_floating("cudnn::kernels::layer_norm_forward", x, [&]<class T, class A>(cudaStream_t stream) {
    forward_kernel<T, A><<<row_blocks(rows), row_threads(cols), 0, stream>>>(
        static_cast<const T*>(x.raw_data()), rows, cols, data_or_null<T>(weight), data_or_null<T>(bias),
        static_cast<A>(eps), static_cast<T*>(y.raw_data()), static_cast<A*>(mean.raw_data()),
        static_cast<A*>(rstd.raw_data()));
  });
}

void layer_norm_backward_input(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                               const tensor::Tensor& weight, const tensor::Tensor& mean, const tensor::Tensor& rstd,
                               const tensor::Tensor& dx) {
  if (rows == 0 || cols == 0) return;
  launch_floating("cudnn::kernels::layer_norm_backward_input", x, [&]<class T, class A>(cudaStream_t stream) {
    backward_input_kernel<T, A><<<row_blocks(rows), row_threads(cols), 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(dy.raw_data()), rows, cols, data_or_null<T>(weight),
        static_cast<const A*>(mean.raw_data()), static_cast<const A*>(rstd.raw_data()), static_cast<T*>(dx.raw_data()));
  });
}

void layer_norm_backward_params(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                                const tensor::Tensor& mean, const tensor::Tensor& rstd,
                                const tensor::Tensor& gradWeight, const tensor::Tensor& gradBias, double scale) {
  if (rows == 0 || cols == 0) return;  // nothing to add (nn adds scale * 0)
  // chunks depend on the shape alone, so the sums' order (and bits) do too
  const int64_t chunkRows = std::max(kMinChunkRows, (rows + kMaxChunks - 1) / kMaxChunks);
  const int64_t chunks = (rows + chunkRows - 1) / chunkRows;
  launch_floating("cudnn::kernels::layer_norm_backward_params", x, [&]<class T, class A>(cudaStream_t stream) {
    const tensor::Tensor partial = tensor::empty({2, chunks, cols}, tensor::dtype_v<A>, x.device());
    const dim3 grid(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols), static_cast<unsigned>(chunks));
    params_partial_kernel<T, A><<<grid, dim3(kTileCols, kTileRows), 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(dy.raw_data()), rows, cols,
        static_cast<const A*>(mean.raw_data()), static_cast<const A*>(rstd.raw_data()), chunkRows,
        static_cast<A*>(partial.raw_data()));
    CUDA_CHECK_LAUNCH("cudnn::kernels::layer_norm_backward_params (partial sums)");
    constexpr int kThreads = 256;
    params_final_kernel<T, A><<<static_cast<unsigned>((cols + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        static_cast<const A*>(partial.raw_data()), chunks, cols, static_cast<A>(scale),
        static_cast<T*>(gradWeight.raw_data()), static_cast<T*>(gradBias.raw_data()));
  });
}

}  // namespace cudnn::kernels
