// FewRowsLinear.cu: see FewRowsLinear.h.
#include "cudnn/kernels/FewRowsLinear.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cudnn/kernels/Dispatch.h"
#include "tensor/cuda/Pack.h"

namespace cudnn::kernels {

// Note [A few rows' product]
// A decode step's products have one row a sequence: GPT-2's qkv projection at batch 1 is
// [1 x 768] x [768 x 2304], 3.5 MB of weights read once for 3.5 MFLOP. cuBLAS runs GEMM tiles
// there (5.3-5.8 us a product in the decode trace, the MLP's down projection split-K with a
// second reduce kernel), about a sixth of the copy rate. Reading the weights is the whole cost,
// so this kernel is a matrix-vector product shaped for the read: one warp an output column n,
// whose lanes stream W's row n (contiguous: W is [N x K], PyTorch's layout) in 16-byte packs,
// kUnroll packs in flight a lane before any is used, each multiplied into every one of x's rows
// (x is small and stays in L1), the lanes' float32 sums then added over the warp. Where N columns
// are too few warps to keep the GPU's loads in flight (GPT-2's 768-column projections: 768
// warps for 132 SMs), up to four warps share a column, each a strided part of K, their sums
// added through shared memory in the parts' order. Each output's order of additions is fixed by
// N and K alone, so results repeat bit for bit from run to run.

namespace {

constexpr int kWarps = 4;   // output columns a block of 128 threads
constexpr int kUnroll = 4;  // 16-byte packs a lane loads before it multiplies

template <class T>
using Pack16 = tensor::cuda::Pack<T, tensor::cuda::kPack16<T>>;

template <class T>
__device__ __forceinline__ Pack16<T> load_pack(const Pack16<T>* p) {
  const uint4 bits = __ldg(reinterpret_cast<const uint4*>(p));
  Pack16<T> out;
  static_assert(sizeof(out) == sizeof(bits));
  memcpy(&out, &bits, sizeof(bits));
  return out;
}

template <class T, int kRows, int kSplit>
__global__ void __launch_bounds__(32 * kWarps)
    few_rows_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, T* __restrict__ y,
                    int64_t N, int64_t K) {
  static_assert(kWarps % kSplit == 0);
  constexpr int V = tensor::cuda::kPack16<T>;
  constexpr int kColumns = kWarps / kSplit;  // output columns a block
  __shared__ float partial[kWarps][kRows];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int part = warp % kSplit;  // this warp's share of K: packs part, part + kSplit, ... of each lane's run
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kColumns + warp / kSplit;
  const int64_t packs = K / V;
  float acc[kRows] = {};
  if (n < N) {
    const auto* wr = reinterpret_cast<const Pack16<T>*>(w + n * K);
    const auto* xs = reinterpret_cast<const Pack16<T>*>(x);
    constexpr int64_t kStride = 32 * kSplit;  // packs between a lane's consecutive loads
    for (int64_t p0 = lane + 32 * part; p0 < packs; p0 += kStride * kUnroll) {
      Pack16<T> wp[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (p0 + kStride * u < packs) wp[u] = load_pack(wr + p0 + kStride * u);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t p = p0 + kStride * u;
        if (p >= packs) break;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const Pack16<T> xp = load_pack(xs + r * packs + p);
#pragma unroll
          for (int e = 0; e < V; ++e)
            acc[r] = fmaf(static_cast<float>(wp[u].v[e]), static_cast<float>(xp.v[e]), acc[r]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    for (int o = 16; o > 0; o /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
  }
  if constexpr (kSplit > 1) {  // the column's warps' sums, added in the order of their parts
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) partial[warp][r] = acc[r];
    }
    __syncthreads();
    if (part != 0) return;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      for (int s = 1; s < kSplit; ++s) acc[r] += partial[warp + s][r];
    }
  }
  if (lane != 0 || n >= N) return;
  const float bias = b ? static_cast<float>(b[n]) : 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; ++r) y[r * N + n] = T(acc[r] + bias);
}

// Warps a column: enough warps in all to fill the GPU (about 2048: 132 SMs of an H100 or H200 at
// 16 each) where N alone gives fewer, as long as each warp keeps at least a pack a lane.
int split_for(int64_t N, int64_t packs) {
  int split = 1;
  while (split < kWarps && N * split < 2048 && packs >= int64_t{64} * split) split *= 2;
  return split;
}

bool aligned16(const tensor::Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()) % 16 == 0; }

bool same_kind(const tensor::Tensor& t, const tensor::Tensor& like) {
  return t.dtype() == like.dtype() && t.device() == like.device() && t.is_contiguous() && aligned16(t);
}

}  // namespace

bool few_rows_linear(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                     const tensor::Tensor& out) {
  const tensor::DType t = x.dtype();
  if ((t != tensor::DType::Float16 && t != tensor::DType::BFloat16) || !x.device().is_cuda()) return false;
  if (x.dim() != 2 || weight.dim() != 2 || out.dim() != 2) return false;
  const int64_t rows = x.size(0), K = x.size(1), N = weight.size(0);
  if (rows < 1 || rows > kFewRowsMax || K < 1 || K % 8 != 0 || N < 1 || weight.size(1) != K || out.size(0) != rows ||
      out.size(1) != N || N > int64_t{65535} * 1024 * kWarps) {
    return false;
  }
  if (!same_kind(x, x) || !same_kind(weight, x) || !same_kind(out, x)) return false;
  if (bias.defined() && (bias.dim() != 1 || bias.numel() != N || !same_kind(bias, x))) return false;
  const int split = split_for(N, K / 8);
  const int64_t columns = kWarps / split;
  const unsigned blocks = static_cast<unsigned>((N + columns - 1) / columns);
  launch_floating("cudnn::kernels::few_rows_linear", x, [&]<class T, class A>(cudaStream_t stream) {
    if constexpr (std::is_same_v<T, tensor::Half> || std::is_same_v<T, tensor::BFloat16>) {
      const T* xs = static_cast<const T*>(x.raw_data());
      const T* ws = static_cast<const T*>(weight.raw_data());
      const T* bs = bias.defined() ? static_cast<const T*>(bias.raw_data()) : nullptr;
      T* ys = static_cast<T*>(out.raw_data());
      const auto launch = [&]<int kRows>() {
        if (split == 4) return few_rows_kernel<T, kRows, 4><<<blocks, 32 * kWarps, 0, stream>>>(xs, ws, bs, ys, N, K);
        if (split == 2) return few_rows_kernel<T, kRows, 2><<<blocks, 32 * kWarps, 0, stream>>>(xs, ws, bs, ys, N, K);
        few_rows_kernel<T, kRows, 1><<<blocks, 32 * kWarps, 0, stream>>>(xs, ws, bs, ys, N, K);
      };
      switch (rows) {
        case 1:
          return launch.template operator()<1>();
        case 2:
          return launch.template operator()<2>();
        case 3:
          return launch.template operator()<3>();
        default:
          return launch.template operator()<4>();
      }
    }
  });
  return true;
}

}  // namespace cudnn::kernels
