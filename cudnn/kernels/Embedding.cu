// Embedding.cu: see Embedding.h.
#include "cudnn/kernels/Embedding.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

using tensor::acc_t;
using Key = unsigned long long;  // CUB sorts unsigned keys by their low bits

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // row kernels loop over the rows past the grid

cudaStream_t stream_of(const tensor::Tensor& t) {
  return static_cast<cudaStream_t>(tensor::cuda::stream(t.device().index));
}

// Threads per row block: a power of two from 32 to 256, about one per column.
int row_threads(int64_t cols) {
  int t = 32;
  while (t < 256 && t < cols) t *= 2;
  return t;
}
unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(std::min(rows, kMaxBlocks)); }

__device__ inline float nan_of(float) { return __int_as_float(0x7fc00000); }
__device__ inline double nan_of(double) { return __longlong_as_double(0x7ff8000000000000LL); }
// Products and sums rounded one by one, as the host's loop (no contraction into an FMA).
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }

__global__ void first_bad_kernel(const int64_t* idx, int64_t n, int64_t num, Key* first) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    if (idx[i] < 0 || idx[i] >= num) atomicMin(first, static_cast<Key>(i));  // a min: the same answer every run
  }
}

template <class T>
__global__ void forward_kernel(const int64_t* idx, int64_t n, const T* w, int64_t num, int64_t D, T* y) {
  using A = acc_t<T>;
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const int64_t k = idx[i];
    const bool ok = k >= 0 && k < num;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) y[i * D + d] = ok ? w[k * D + d] : T(nan_of(A(0)));
  }
}

// keys[i] = idx[i], or `num` (sorted last, skipped) for the padding index and indices out of range.
__global__ void keys_kernel(const int64_t* idx, int64_t n, int64_t num, int64_t pad, Key* keys, int64_t* pos) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t k = idx[i];
    keys[i] = static_cast<Key>(k < 0 || k >= num || k == pad ? num : k);
    pos[i] = i;
  }
}

// One block per sorted position j that starts a run of equal keys (others return at once).
template <class T>
__global__ void accumulate_kernel(const Key* keys, const int64_t* pos, int64_t n, int64_t num, const T* dy, int64_t D,
                                  acc_t<T> scale, T* gw) {
  using A = acc_t<T>;
  for (int64_t j = blockIdx.x; j < n; j += gridDim.x) {
    const Key k = keys[j];
    if (k == static_cast<Key>(num) || (j > 0 && keys[j - 1] == k)) continue;
    T* row = gw + static_cast<int64_t>(k) * D;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      A acc = static_cast<A>(row[d]);
      for (int64_t q = j; q < n && keys[q] == k; ++q)
        acc = add_rn(acc, mul_rn(scale, static_cast<A>(dy[pos[q] * D + d])));
      row[d] = T(acc);
    }
  }
}

}  // namespace

int64_t embedding_first_bad_index(const tensor::Tensor& idx, int64_t num, int64_t& value) {
  const int64_t n = idx.numel();
  if (n == 0) return -1;
  const int device = idx.device().index;
  tensor::cuda::DeviceGuard guard(device);
  const tensor::Tensor first = tensor::empty({1}, tensor::DType::Int64, idx.device());
  CUDA_CHECK(cudaMemsetAsync(first.raw_data(), 0xff, sizeof(Key), stream_of(idx)));  // no bad one yet
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 4096));
  first_bad_kernel<<<blocks, kThreads, 0, stream_of(idx)>>>(idx.data<int64_t>(), n, num,
                                                            static_cast<Key*>(first.raw_data()));
  CUDA_CHECK_LAUNCH("cudnn::kernels::embedding_first_bad_index");
  Key at = 0;
  tensor::cuda::copy_bytes(&at, false, first.raw_data(), true, sizeof(Key), device);
  if (at == ~Key{0}) return -1;
  const int64_t i = static_cast<int64_t>(at);
  tensor::cuda::copy_bytes(&value, false, idx.data<int64_t>() + i, true, sizeof(int64_t), device);
  return i;
}

void embedding_forward(const tensor::Tensor& idx, const tensor::Tensor& weight, const tensor::Tensor& y) {
  const int64_t n = idx.numel(), num = weight.size(0), D = weight.size(1);
  if (n == 0) return;
  tensor::cuda::DeviceGuard guard(idx.device().index);
  dispatch_floating("cudnn::kernels::embedding_forward", weight, [&](auto tag) {
    using T = decltype(tag);
    forward_kernel<T><<<row_blocks(n), row_threads(D), 0, stream_of(idx)>>>(
        idx.data<int64_t>(), n, static_cast<const T*>(weight.raw_data()), num, D, static_cast<T*>(y.raw_data()));
    CUDA_CHECK_LAUNCH("cudnn::kernels::embedding_forward");
  });
}

void embedding_backward(const tensor::Tensor& idx, const tensor::Tensor& dy, const tensor::Tensor& gradWeight,
                        int64_t paddingIdx, double scale) {
  const int64_t n = idx.numel(), num = gradWeight.size(0), D = gradWeight.size(1);
  if (n == 0) return;
  const tensor::Device dev = idx.device();
  tensor::cuda::DeviceGuard guard(dev.index);
  const cudaStream_t stream = stream_of(idx);
  // keys and positions in, sorted keys and positions out: [4 x n] int64
  const tensor::Tensor work = tensor::empty({4, n}, tensor::DType::Int64, dev);
  Key* keys = static_cast<Key*>(work.raw_data());
  int64_t* pos = static_cast<int64_t*>(work.raw_data()) + n;
  Key* sortedKeys = keys + 2 * n;
  int64_t* sortedPos = pos + 2 * n;
  keys_kernel<<<static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 4096)), kThreads, 0, stream>>>(
      idx.data<int64_t>(), n, num, paddingIdx, keys, pos);
  CUDA_CHECK_LAUNCH("cudnn::kernels::embedding_backward (keys)");
  int bits = 1;  // the keys' width: enough for `num`, the skip key
  while (bits < 63 && (int64_t{1} << bits) <= num) ++bits;
  size_t tempBytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, tempBytes, keys, sortedKeys, pos, sortedPos, n, 0, bits, stream));
  const tensor::Tensor temp =
      tensor::empty({static_cast<int64_t>(std::max<size_t>(tempBytes, 1))}, tensor::DType::UInt8, dev);
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.raw_data(), tempBytes, keys, sortedKeys, pos, sortedPos, n, 0, bits,
                                             stream));
  dispatch_floating("cudnn::kernels::embedding_backward", gradWeight, [&](auto tag) {
    using T = decltype(tag);
    accumulate_kernel<T><<<row_blocks(n), row_threads(D), 0, stream>>>(
        sortedKeys, sortedPos, n, num, static_cast<const T*>(dy.raw_data()), D, static_cast<acc_t<T>>(scale),
        static_cast<T*>(gradWeight.raw_data()));
    CUDA_CHECK_LAUNCH("cudnn::kernels::embedding_backward");
  });
}

}  // namespace cudnn::kernels
