// Bias.cu
#include "cudnn/kernels/Bias.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tensor/Cuda.h"
#include "tensor/cuda/BlockFold.cuh"
#include "tensor/cuda/CudaCheck.h"
#include "tensor/cuda/Pack.h"

// Note [Bias kernels]
// On convnet-benchmarks' L1 (3 -> 96 11x11 on [128 x 3 x 128 x 128], float16, H100) the
// output holds 171 M elements (342 MB). cudnnAddTensor took 0.7 ms to add the bias (reading
// and writing it once is about 0.2 ms of HBM3 traffic); cudnnConvolutionBackwardBias took
// 1.46 ms to sum the gradient in NCHW and 6.5 ms in channels-last, against about 0.1 ms to
// read it. The layouts are simple enough to do better with two plain kernels:
// - row-major: y is [N*C rows x S], each row one channel's contiguous run; the add moves
//   16-byte packs that stay within a run where S allows, the sum gives one warp per
//   (row, segment) a partial sum;
// - channels-last: y is [N*S rows x C], channel c every C elements; the add's packs hold
//   consecutive channels, and so do the sum's where C allows (each thread a pack's V channels
//   over a chunk of rows, four 16-byte loads in flight: the one-element version moved a ResNet-50
//   step's gradients at about 1.6 TB/s), else each block a tile of 32 channels;
// and a last kernel folds each channel's partial sums in a fixed order (deterministic): for the
// packed sum, one pass over the columns of its [chunks x C] partial sums, 32 x 32 threads per
// 32 channels (a block per channel reading a column with a stride of C took 0.18 ms of 53 calls).

namespace cudnn::kernels {

namespace {

using tensor::acc_t;
using tensor::cuda::Pack;
using tensor::Tensor;

constexpr int kThreads = 256;

struct Layout {
  bool ok = false;
  bool channels_last = false;
  int64_t N = 0, C = 0, S = 0;
};

Layout layout_of(const Tensor& t) {
  Layout l;
  if (t.dim() < 3) return l;
  l.N = t.size(0);
  l.C = t.size(1);
  l.S = t.numel() / std::max<int64_t>(l.N * l.C, 1);
  if (t.numel() == 0) l.S = 1;
  if (t.is_contiguous()) {
    l.ok = true;
  } else if (t.is_contiguous(tensor::MemoryFormat::ChannelsLast)) {
    l.ok = l.channels_last = true;
  }
  return l;
}

int sm_count(int device) {
  int n = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return std::max(n, 1);
}

// ---------------------------------------------------------------------------- add

// Packs of V elements (16 bytes where the layout allows) share one channel (row-major: the
// run length S is a multiple of V) or hold V consecutive channels (channels-last: C is a
// multiple of V), so a pack needs one index division. I: the index type (32-bit when it fits).

template <class T, int V, class I, bool kChannelsLast>
__global__ void add_kernel(T* y, const T* bias, I packs, I C, I S) {
  using A = acc_t<T>;
  auto* p = reinterpret_cast<Pack<T, V>*>(y);
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < packs; i += I(gridDim.x) * blockDim.x) {
    Pack<T, V> pk = p[i];
    const I e = i * V;
    if constexpr (kChannelsLast) {
      const I c0 = e % C;
#pragma unroll
      for (int k = 0; k < V; ++k) pk.v[k] = T(static_cast<A>(pk.v[k]) + static_cast<A>(bias[c0 + k]));
    } else {
      const A b = static_cast<A>(bias[(e / S) % C]);
#pragma unroll
      for (int k = 0; k < V; ++k) pk.v[k] = T(static_cast<A>(pk.v[k]) + b);
    }
    p[i] = pk;
  }
}

template <class T, int V, bool kChannelsLast>
void launch_add(T* y, const T* bias, int64_t n, int64_t C, int64_t S, int64_t max_blocks, cudaStream_t stream) {
  const int64_t packs = n / V;
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>((packs + kThreads - 1) / kThreads, 1, max_blocks));
  if (n < (int64_t(1) << 32)) {
    add_kernel<T, V, uint32_t, kChannelsLast><<<blocks, kThreads, 0, stream>>>(
        y, bias, static_cast<uint32_t>(packs), static_cast<uint32_t>(C), static_cast<uint32_t>(S));
  } else {
    add_kernel<T, V, uint64_t, kChannelsLast><<<blocks, kThreads, 0, stream>>>(
        y, bias, static_cast<uint64_t>(packs), static_cast<uint64_t>(C), static_cast<uint64_t>(S));
  }
}

// The widest pack (16 bytes down to one element) that divides the run and fits the alignment.
template <class T, bool kChannelsLast>
void add_widest(T* y, const T* bias, int64_t n, int64_t C, int64_t S, int64_t max_blocks, cudaStream_t stream) {
  const int64_t run = kChannelsLast ? C : S;
  const auto fits = [&](int v) {
    return run % v == 0 && reinterpret_cast<uintptr_t>(y) % (sizeof(T) * static_cast<size_t>(v)) == 0;
  };
  constexpr int kWidest = static_cast<int>(16 / sizeof(T));
  if constexpr (kWidest >= 8) {
    if (fits(8)) return launch_add<T, 8, kChannelsLast>(y, bias, n, C, S, max_blocks, stream);
  }
  if constexpr (kWidest >= 4) {
    if (fits(4)) return launch_add<T, 4, kChannelsLast>(y, bias, n, C, S, max_blocks, stream);
  }
  if (fits(2)) return launch_add<T, 2, kChannelsLast>(y, bias, n, C, S, max_blocks, stream);
  launch_add<T, 1, kChannelsLast>(y, bias, n, C, S, max_blocks, stream);
}

// ---------------------------------------------------------------------------- sum

template <class A>
__device__ A warp_sum(A v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Row-major: the (row, segment) pairs are split among warps; warp w of the grid sums
// segment k of row r into partial[r * segments + k].
template <class T>
__global__ void sum_rows_kernel(const T* dy, acc_t<T>* partial, int64_t rows, int64_t S, int64_t segments,
                                int64_t seg_len) {
  using A = acc_t<T>;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t item = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32; item < rows * segments; item += warps) {
    const int64_t r = item / segments, k = item % segments;
    const int64_t begin = k * seg_len, end = begin + seg_len < S ? begin + seg_len : S;
    const T* row = dy + r * S;
    A acc = A(0);
    for (int64_t s = begin + lane; s < end; s += 32) acc += static_cast<A>(row[s]);
    acc = warp_sum(acc);
    if (lane == 0) partial[item] = acc;
  }
}

// Channels-last: block (x, y) sums channels [32 x, 32 x + 32) over row chunk y into
// partial[y * C + c]; threads (tx, ty) of a 32 x 8 block.
template <class T>
__global__ void sum_channels_last_kernel(const T* dy, acc_t<T>* partial, int64_t rows, int64_t C, int64_t chunk) {
  using A = acc_t<T>;
  __shared__ A shared[8][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c = blockIdx.x * 32 + tx;
  const int64_t begin = blockIdx.y * chunk, end = begin + chunk < rows ? begin + chunk : rows;
  A acc = A(0);
  if (c < C) {
    for (int64_t r = begin + ty; r < end; r += 8) acc += static_cast<A>(dy[r * C + c]);
  }
  shared[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && c < C) {
    A total = shared[0][tx];
    for (int k = 1; k < 8; ++k) total += shared[k][tx];
    partial[blockIdx.y * C + c] = total;
  }
}

// Channels-last in 16-byte packs (C a multiple of V = 16 / sizeof(T), dy 16-byte aligned): dy is
// [rows x P] packs. A block takes `tile` packs from blockIdx.x * tile (tile = min(P, kThreads)) and
// the rows of chunk blockIdx.y: thread t sums pack t % tile over the rows t / tile, t / tile +
// steps, ... (steps = kThreads / tile), four loads in flight, V sums in registers; the threads of
// one pack then fold their sums in shared memory in a fixed order, and the first writes
// partial[blockIdx.y * C + c] for the pack's V channels.
template <class T, int V>
__global__ void __launch_bounds__(kThreads)
    sum_channels_last_packed_kernel(const T* dy, acc_t<T>* partial, int64_t rows, int64_t C, int64_t chunk, int tile) {
  using A = acc_t<T>;
  __shared__ A shared[kThreads * V];
  const int steps = kThreads / tile, lane = static_cast<int>(threadIdx.x) % tile, step = threadIdx.x / tile;
  const int64_t packs = C / V, pack = int64_t(blockIdx.x) * tile + lane;
  const bool active = step < steps && pack < packs;
  A acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = A(0);
  if (active) {
    const int64_t begin = int64_t(blockIdx.y) * chunk, end = min(rows, begin + chunk);
    const Pack<T, V>* column = reinterpret_cast<const Pack<T, V>*>(dy) + pack;
    int64_t r = begin + step;
    for (; r + 3 * steps < end; r += 4 * steps) {
      Pack<T, V> q[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) q[u] = column[(r + u * steps) * packs];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] += static_cast<A>(q[u].v[j]);
      }
    }
    for (; r < end; r += steps) {
      const Pack<T, V> q = column[r * packs];
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] += static_cast<A>(q.v[j]);
    }
  }
  if (step < steps) {
#pragma unroll
    for (int j = 0; j < V; ++j) shared[(step * tile + lane) * V + j] = acc[j];
  }
  __syncthreads();
  if (step == 0 && pack < packs) {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      A total = shared[lane * V + j];
      for (int k = 1; k < steps; ++k) total += shared[(k * tile + lane) * V + j];
      partial[int64_t(blockIdx.y) * C + pack * V + j] = total;
    }
  }
}

// partial [chunks x C] -> db[c] = alpha * (its column's sum) + beta * db[c] (beta * db[c] only
// when keep): a block of 32 x 32 threads per 32 channels, thread (x, y) summing rows y, y + 32,
// ... of channel 32 blockIdx.x + x (coalesced), folded over y in a fixed order.
template <class T>
__global__ void finish_columns_kernel(const acc_t<T>* partial, T* db, int64_t chunks, int64_t C, acc_t<T> alpha,
                                      acc_t<T> beta, bool keep) {
  using A = acc_t<T>;
  __shared__ A shared[32][33];
  const int x = threadIdx.x, y = threadIdx.y;
  const int64_t c = int64_t(blockIdx.x) * 32 + x;
  A acc = A(0);
  if (c < C) {
#pragma unroll 4
    for (int64_t i = y; i < chunks; i += 32) acc += partial[i * C + c];
  }
  shared[y][x] = acc;
  __syncthreads();
  if (y == 0 && c < C) {
    A total = shared[0][x];
    for (int k = 1; k < 32; ++k) total += shared[k][x];
    const A sum = alpha * total;
    db[c] = T(keep ? sum + beta * static_cast<A>(db[c]) : sum);  // beta 0 ignores db, NaN included
  }
}

// db = alpha * sums + beta * db from a product's per-channel sums (bias_grad_from_sums), a block
// of 32 x 32 threads per 32 channels. The sums were rounded to db's dtype: one that came out
// non-finite (beyond the dtype's range, or a NaN) is summed again from dy's [rows x C] in the
// accumulation type, the 32 threads of its channel each taking every 32nd row, folded in a fixed
// order, so the result is what the column pass would have given.
template <class T>
__global__ void finish_sums_kernel(const T* sums, const T* dy, int64_t rows, T* db, int64_t C, acc_t<T> alpha,
                                   acc_t<T> beta, bool keep) {
  using A = acc_t<T>;
  __shared__ A shared[32][33];
  const int x = threadIdx.x, y = threadIdx.y;
  const int64_t c = int64_t(blockIdx.x) * 32 + x;
  A sum = c < C ? static_cast<A>(sums[c]) : A(0);
  const bool again = c < C && !isfinite(static_cast<double>(sum));
  A acc = A(0);
  if (again) {
    for (int64_t r = y; r < rows; r += 32) acc += static_cast<A>(dy[r * C + c]);
  }
  shared[y][x] = acc;
  __syncthreads();
  if (y == 0 && c < C) {
    if (again) {
      sum = shared[0][x];
      for (int k = 1; k < 32; ++k) sum += shared[k][x];
    }
    const A value = alpha * sum;
    db[c] = T(keep ? value + beta * static_cast<A>(db[c]) : value);  // beta 0 ignores db, NaN included
  }
}

// One block per channel c: the partial sums at c * c_stride + i * outer_stride + j
// (i < outer, j < inner) are folded in a fixed order, then db[c] = alpha * sum + beta * db[c].
template <class T>
__global__ void finish_kernel(const acc_t<T>* partial, T* db, int64_t outer, int64_t outer_stride, int64_t inner,
                              int64_t c_stride, acc_t<T> alpha, acc_t<T> beta, bool keep) {
  using A = acc_t<T>;
  __shared__ A shared[kThreads];
  const int64_t c = blockIdx.x;
  A acc = A(0);
  for (int64_t i = threadIdx.x; i < outer * inner; i += kThreads) {
    acc += partial[c * c_stride + (i / inner) * outer_stride + i % inner];
  }
  shared[threadIdx.x] = acc;
  tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) { shared[i] += shared[j]; });
  if (threadIdx.x == 0) {
    const A sum = alpha * shared[0];
    db[c] = T(keep ? sum + beta * static_cast<A>(db[c]) : sum);  // beta 0 ignores db, NaN included
  }
}

template <class T>
constexpr bool floating() {
  return !std::is_same_v<T, int64_t> && !std::is_same_v<T, uint8_t>;
}

// fn(T{}, the dtype of T's accumulation type) for a floating dtype; false for the others.
template <class F>
bool dispatch_floating(tensor::DType dtype, F&& fn) {
  return tensor::dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!floating<T>()) {
      return false;
    } else {
      constexpr bool wide = std::is_same_v<acc_t<T>, double>;
      return fn(tag, wide ? tensor::DType::Float64 : tensor::DType::Float32);
    }
  });
}

}  // namespace

bool bias_add(const Tensor& y, const Tensor& bias) {
  const Layout l = layout_of(y);
  if (!l.ok || !bias.is_contiguous() || bias.dtype() != y.dtype() || bias.numel() != l.C) return false;
  if (y.numel() == 0) return true;
  const int device = y.device().index;
  tensor::cuda::DeviceGuard guard(device);
  auto stream = static_cast<cudaStream_t>(tensor::cuda::stream(device));
  const int64_t resident = int64_t(sm_count(device)) * 2048 / kThreads;  // blocks that fill the GPU once
  return tensor::dispatch(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!floating<T>()) {
      return false;
    } else {
      T* out = static_cast<T*>(y.raw_data());
      const T* b = static_cast<const T*>(bias.raw_data());
      if (l.channels_last) {
        add_widest<T, true>(out, b, y.numel(), l.C, l.S, resident * 4, stream);
      } else {
        add_widest<T, false>(out, b, y.numel(), l.C, l.S, resident * 4, stream);
      }
      CUDA_CHECK_LAUNCH("cudnn::kernels::bias_add");
      return true;
    }
  });
}

bool bias_grad(const Tensor& dy, const Tensor& db, double alpha, double beta, void* on, Tensor* keep) {
  const Layout l = layout_of(dy);
  if (!l.ok || !db.is_contiguous() || db.dtype() != dy.dtype() || db.numel() != l.C) return false;
  if (l.C == 0) return true;
  if (on && dy.numel() == 0) return false;
  const int device = dy.device().index;
  tensor::cuda::DeviceGuard guard(device);
  auto stream = static_cast<cudaStream_t>(on ? on : tensor::cuda::stream(device));
  const int64_t resident = int64_t(sm_count(device)) * 2048 / kThreads;
  return dispatch_floating(dy.dtype(), [&](auto tag, tensor::DType acc_dtype) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* g = static_cast<const T*>(dy.raw_data());
    const int64_t elements_per_channel = dy.numel() / l.C;
    Tensor partial;
    int64_t outer = 0, outer_stride = 0, inner = 1, c_stride = 0;
    bool columns = false;  // finished by finish_columns_kernel over [outer x C] partial sums
    if (elements_per_channel == 0) {
      partial = tensor::zeros({1}, acc_dtype, dy.device());  // nothing to sum: db = beta * db
    } else if (!l.channels_last) {
      const int64_t rows = l.N * l.C;
      // enough (row, segment) items to keep every warp busy, each at least 1024 elements
      const int64_t wanted = std::max<int64_t>(1, resident * (kThreads / 32) * 2 / rows);
      const int64_t segments = std::clamp<int64_t>((l.S + 1023) / 1024, 1, wanted);
      const int64_t seg_len = (l.S + segments - 1) / segments;
      partial = tensor::empty({rows * segments}, acc_dtype, dy.device());
      const auto blocks = static_cast<unsigned>(
          std::min<int64_t>((rows * segments + kThreads / 32 - 1) / (kThreads / 32), resident * 8));
      sum_rows_kernel<T><<<blocks, kThreads, 0, stream>>>(g, partial.data<A>(), rows, l.S, segments, seg_len);
      outer = l.N, outer_stride = l.C * segments, inner = segments, c_stride = segments;
    } else if (constexpr int V = 16 / sizeof(T); l.C % V == 0 && reinterpret_cast<uintptr_t>(g) % 16 == 0) {
      // Note [Bias kernels]: packs over the channels, then one pass over the partial sums' columns
      const int64_t rows = l.N * l.S, packs = l.C / V;
      const int tile = static_cast<int>(std::min<int64_t>(packs, kThreads));
      const int64_t tiles = (packs + tile - 1) / tile, steps = kThreads / tile;
      // about four blocks an SM in all, each thread at least 16 rows, at most 1024 chunks
      const int64_t chunks =
          std::clamp<int64_t>(std::min<int64_t>(int64_t(sm_count(device)) * 4 / tiles, rows / (16 * steps)), 1, 1024);
      const int64_t chunk = (rows + chunks - 1) / chunks;
      partial = tensor::empty({chunks * l.C}, acc_dtype, dy.device());
      sum_channels_last_packed_kernel<T, V>
          <<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)), kThreads, 0, stream>>>(
              g, partial.data<A>(), rows, l.C, chunk, tile);
      outer = chunks, columns = true;
    } else {
      const int64_t rows = l.N * l.S;
      const int64_t tiles = (l.C + 31) / 32;
      const int64_t chunks = std::clamp<int64_t>((rows + 255) / 256, 1, std::max<int64_t>(1, resident * 4 / tiles));
      const int64_t chunk = (rows + chunks - 1) / chunks;
      partial = tensor::empty({chunks * l.C}, acc_dtype, dy.device());
      sum_channels_last_kernel<T>
          <<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)), dim3(32, 8), 0, stream>>>(
              g, partial.data<A>(), rows, l.C, chunk);
      outer = chunks, outer_stride = l.C, inner = 1, c_stride = 1;
    }
    if (columns) {
      finish_columns_kernel<T><<<static_cast<unsigned>((l.C + 31) / 32), dim3(32, 32), 0, stream>>>(
          partial.data<A>(), static_cast<T*>(db.raw_data()), outer, l.C, static_cast<A>(alpha), static_cast<A>(beta),
          beta != 0);
    } else {
      finish_kernel<T><<<static_cast<unsigned>(l.C), kThreads, 0, stream>>>(
          partial.data<A>(), static_cast<T*>(db.raw_data()), outer, outer_stride, inner, c_stride,
          static_cast<A>(alpha), static_cast<A>(beta), beta != 0);
    }
    CUDA_CHECK_LAUNCH("cudnn::kernels::bias_grad");
    if (keep) *keep = partial;
    return true;
  });
}

bool bias_grad_from_sums(const Tensor& sums, const Tensor& dy, const Tensor& db, double alpha, double beta) {
  const int64_t C = db.numel();
  if (!db.is_contiguous() || !sums.is_contiguous() || sums.numel() != C || sums.dtype() != db.dtype() ||
      sums.device() != db.device() || !dy.defined() || dy.dtype() != db.dtype() || dy.device() != db.device() ||
      (dy.dim() != 4 && dy.dim() != 2) || dy.size(1) != C ||
      !dy.is_contiguous(dy.dim() == 4 ? tensor::MemoryFormat::ChannelsLast : tensor::MemoryFormat::Contiguous)) {
    return false;
  }
  if (C == 0) return true;
  const int device = db.device().index;
  tensor::cuda::DeviceGuard guard(device);
  auto stream = static_cast<cudaStream_t>(tensor::cuda::stream(device));
  return dispatch_floating(db.dtype(), [&](auto tag, tensor::DType) {
    using T = decltype(tag);
    using A = acc_t<T>;
    finish_sums_kernel<T><<<static_cast<unsigned>((C + 31) / 32), dim3(32, 32), 0, stream>>>(
        static_cast<const T*>(sums.raw_data()), static_cast<const T*>(dy.raw_data()), dy.numel() / C,
        static_cast<T*>(db.raw_data()), C, static_cast<A>(alpha), static_cast<A>(beta), beta != 0);
    CUDA_CHECK_LAUNCH("cudnn::kernels::bias_grad_from_sums");
    return true;
  });
}

}  // namespace cudnn::kernels
