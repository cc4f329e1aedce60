// LayerNorm.cu: see LayerNorm.h.
#include "cudnn/kernels/LayerNorm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"
#include "tensor/cuda/Pack.h"

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

// Note [Warp-per-row layer norm]
// A row that splits into 16-byte packs, at most kMaxPacks per lane, is one warp's: each lane
// loads its packs once into registers (vector loads, coalesced), and the two sums are warp
// shuffles with no shared memory or barrier. The block kernel above reads a row three times
// with two block barriers, and ran [8192 x 768] float16 in 0.044 ms against PyTorch's 0.036
// (docs/performance.md). The butterfly (xor) sums leave every lane the same value, since each
// step adds the same two operands in either order; the sums' order differs from the block
// kernel's, so results agree with it and with nn to rounding, not to the bit. Other rows (odd
// lengths, unaligned views, long rows) keep the block kernel.
constexpr int kWarpRows = 4;  // rows (warps) per block
constexpr int kMaxPacks = 8;  // packs per lane: rows up to 32 * 8 * 16 bytes (2048 16-bit values)

// a row's 16-byte packs
template <class T>
using Pack = tensor::cuda::Pack<T, tensor::cuda::kPack16<T>>;

template <class A>
__device__ A warp_sum(A v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <class T, class A, int kPacks>
__global__ void forward_warp_kernel(const T* x, int64_t rows, int64_t cols, const T* w, const T* b, A eps, T* y,
                                    A* mean, A* rstd) {
  constexpr int V = tensor::cuda::kPack16<T>;
  const int lane = threadIdx.x % 32;
  const int64_t packs = cols / V;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpRows + threadIdx.x / 32; r < rows;
       r += static_cast<int64_t>(gridDim.x) * kWarpRows) {
    const Pack<T>* xr = reinterpret_cast<const Pack<T>*>(x + r * cols);
    A v[kPacks][V];
    A s = 0;
    // the weight and bias are loaded with the row, not after its two reductions: a decode step's
    // single row otherwise waits for a second round trip to memory (Note [Warp-per-row layer norm])
    Pack<T> wp[kPacks], bp[kPacks];
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
      const int64_t p = j * 32 + lane;
      if (p >= packs) continue;
      const Pack<T> q = xr[p];
      if (w) wp[j] = reinterpret_cast<const Pack<T>*>(w)[p], bp[j] = reinterpret_cast<const Pack<T>*>(b)[p];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        v[j][e] = static_cast<A>(q.v[e]);
        s += v[j][e];
      }
    }
    const A m = warp_sum(s) / static_cast<A>(cols);
    A d2 = 0;
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
      if (j * 32 + lane >= packs) continue;
#pragma unroll
      for (int e = 0; e < V; ++e) d2 += (v[j][e] - m) * (v[j][e] - m);
    }
    const A rs = A(1) / sqrt_of(warp_sum(d2) / static_cast<A>(cols) + eps);
    if (lane == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    Pack<T>* yr = reinterpret_cast<Pack<T>*>(y + r * cols);
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
      const int64_t p = j * 32 + lane;
      if (p >= packs) continue;
      Pack<T> o;
      if (w) {
#pragma unroll
        for (int e = 0; e < V; ++e)
          o.v[e] = T((v[j][e] - m) * rs * static_cast<A>(wp[j].v[e]) + static_cast<A>(bp[j].v[e]));
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) o.v[e] = T((v[j][e] - m) * rs);
      }
      yr[p] = o;
    }
  }
}

// The packs per lane the warp kernel needs for rows of `cols` T values at these addresses, or 0
// where the block kernel takes the rows.
template <class T>
int warp_packs(int64_t cols, std::initializer_list<const void*> pointers) {
  constexpr int V = tensor::cuda::kPack16<T>;
  if (cols % V != 0 || cols / V > 32 * kMaxPacks) return 0;
  for (const void* p : pointers) {
    if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) return 0;
  }
  int packs = 1;
  while (packs * 32 * V < cols) packs *= 2;
  return packs;
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
    const T *xs = static_cast<const T*>(x.raw_data()), *ws = data_or_null<T>(weight), *bs = data_or_null<T>(bias);
    T* ys = static_cast<T*>(y.raw_data());
    A *ms = static_cast<A*>(mean.raw_data()), *rs = static_cast<A*>(rstd.raw_data());
    const auto warp_launch = [&]<int kPacks>() {  // Note [Warp-per-row layer norm]
      const unsigned blocks = row_blocks((rows + kWarpRows - 1) / kWarpRows);
      forward_warp_kernel<T, A, kPacks>
          <<<blocks, 32 * kWarpRows, 0, stream>>>(xs, rows, cols, ws, bs, static_cast<A>(eps), ys, ms, rs);
    };
    switch (warp_packs<T>(cols, {xs, ys, ws, bs})) {
      case 1:
        return warp_launch.template operator()<1>();
      case 2:
        return warp_launch.template operator()<2>();
      case 4:
        return warp_launch.template operator()<4>();
      case 8:
        return warp_launch.template operator()<8>();
      default:
        forward_kernel<T, A><<<row_blocks(rows), row_threads(cols), 0, stream>>>(xs, rows, cols, ws, bs,
                                                                                 static_cast<A>(eps), ys, ms, rs);
    }
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
