// FewRowsLinear.cu: see FewRowsLinear.h.
#include "cudnn/kernels/FewRowsLinear.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cudnn/kernels/Dispatch.h"
#include "cudnn/kernels/SmoothActivations.cuh"
#include "nn/kernels/SwiGLU.h"
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

// Note [An activation in the epilogue]
// GPT-2's MLP is Linear, GELU (tanh form), Linear: in a decode step the GELU is a launch of its
// own over the product's few rows, as long as the product's. With `activated` the kernel writes
// the product (the Linear's output, which GELU's backward reads as its input) and GELU of its
// rounded value, by the functor the activation kernels use (SmoothActivations.cuh) in float32
// as they compute it, so both outputs are the two launches' bits (Sequential offers the pair:
// Module::forwardThrough).

// Note [A gated pair]
// SwiGLU's forward is two products of one x (gate and up, [rows x hidden] each) and the gate
// h = silu(gate) * up: three launches, each a few microseconds in a decode step for about 2 us
// of reading. One launch does all three here: a warp (or its split) reads row n of both weights,
// keeps a sum for each, rounds each as the plain kernel does (the same lanes, packs and order of
// additions, so gate and up are the plain kernel's bits) and writes gate, up (which backward
// reads, as after the three launches) and the gate of those rounded values.

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

// What a launch reads and writes. One product: w[0], b[0] (nullable), addend (nullable) into
// y[0], and where `act` is set (Note [An activation in the epilogue]) GELU of it into h. Gated (SwiGLU's gate and up
// projections, Note [A gated pair]): w[0] and w[1] are the two weights, y[0] and y[1] their products (the module keeps
// both for backward) and h their gate.
template <class T>
struct FewRowsArgs {
  const T* x;
  const T* w[2];
  const T* b[2];
  const T* addend;
  T* y[2];
  T* h;
  int act;  // 0: none; 1: GELU (erf); 2: GELU's tanh form
  int64_t N, K;
};

template <class T, int kRows, int kSplit, int kMats>
__global__ void __launch_bounds__(32 * kWarps) few_rows_kernel(const FewRowsArgs<T> a) {
  static_assert(kWarps % kSplit == 0 && (kMats == 1 || kMats == 2));
  constexpr int V = tensor::cuda::kPack16<T>;
  constexpr int kColumns = kWarps / kSplit;  // output columns a block
  __shared__ float partial[kWarps][kMats][kRows];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int part = warp % kSplit;  // this warp's share of K: packs part, part + kSplit, ... of each lane's run
  const int64_t N = a.N, K = a.K;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kColumns + warp / kSplit;
  const int64_t packs = K / V;
  float acc[kMats][kRows] = {};
  if (n < N) {
    const Pack16<T>* wr[kMats];
#pragma unroll
    for (int m = 0; m < kMats; ++m) wr[m] = reinterpret_cast<const Pack16<T>*>(a.w[m] + n * K);
    const auto* xs = reinterpret_cast<const Pack16<T>*>(a.x);
    constexpr int64_t kStride = 32 * kSplit;  // packs between a lane's consecutive loads
    for (int64_t p0 = lane + 32 * part; p0 < packs; p0 += kStride * kUnroll) {
      Pack16<T> wp[kMats][kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int m = 0; m < kMats; ++m) {
          if (p0 + kStride * u < packs) wp[m][u] = load_pack(wr[m] + p0 + kStride * u);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t p = p0 + kStride * u;
        if (p >= packs) break;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const Pack16<T> xp = load_pack(xs + r * packs + p);
#pragma unroll
          for (int m = 0; m < kMats; ++m) {
#pragma unroll
            for (int e = 0; e < V; ++e)
              acc[m][r] = fmaf(static_cast<float>(wp[m][u].v[e]), static_cast<float>(xp.v[e]), acc[m][r]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kMats; ++m) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      for (int o = 16; o > 0; o /= 2) acc[m][r] += __shfl_xor_sync(0xffffffffu, acc[m][r], o);
    }
  }
  if constexpr (kSplit > 1) {  // the column's warps' sums, added in the order of their parts
    if (lane == 0) {
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) partial[warp][m][r] = acc[m][r];
      }
    }
    __syncthreads();
    if (part != 0) return;
#pragma unroll
    for (int m = 0; m < kMats; ++m) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        for (int s = 1; s < kSplit; ++s) acc[m][r] += partial[warp + s][m][r];
      }
    }
  }
  if (lane != 0 || n >= N) return;
  float bias[kMats];
#pragma unroll
  for (int m = 0; m < kMats; ++m) bias[m] = a.b[m] ? static_cast<float>(a.b[m][n]) : 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int64_t i = r * N + n;
    if constexpr (kMats == 1) {
      // the addend after the bias, as nn's product then its sum
      const float sum = acc[0][r] + bias[0];
      const T y = T(a.addend ? sum + static_cast<float>(a.addend[i]) : sum);
      a.y[0][i] = y;
      if (a.act == 1) a.h[i] = T(GeluOp()(static_cast<float>(y)));
      if (a.act == 2) a.h[i] = T(GeluTanhOp()(static_cast<float>(y)));
    } else {
      // each product rounded as the plain kernel rounds it, then the gate of the rounded values
      // as cudnn/kernels/SwiGLU.cu computes it
      const T gate = T(acc[0][r] + bias[0]), up = T(acc[1][r] + bias[1]);
      a.y[0][i] = gate;
      a.y[1][i] = up;
      a.h[i] = T(nn::kernels::gate_silu(static_cast<float>(gate)) * static_cast<float>(up));
    }
  }
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

// The checks both entry points share: the shapes of x [rows x K], a weight [N x K] and an output
// [rows x N] the kernel takes, and the kinds (dtype, device, contiguous, aligned).
bool takes(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
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
  return !bias.defined() || (bias.dim() == 1 && bias.numel() == N && same_kind(bias, x));
}

template <int kMats>
void launch(const char* op, const tensor::Tensor& x, int64_t N, const auto& fill) {
  const int64_t rows = x.size(0), K = x.size(1);
  const int split = split_for(N * kMats, K / 8);
  const int64_t columns = kWarps / split;
  const unsigned blocks = static_cast<unsigned>((N + columns - 1) / columns);
  launch_floating(op, x, [&]<class T, class A>(cudaStream_t stream) {
    if constexpr (std::is_same_v<T, tensor::Half> || std::is_same_v<T, tensor::BFloat16>) {
      FewRowsArgs<T> args{};
      args.x = static_cast<const T*>(x.raw_data());
      args.N = N, args.K = K;
      fill(args);
      const auto go = [&]<int kRows>() {
        if (split == 4) return few_rows_kernel<T, kRows, 4, kMats><<<blocks, 32 * kWarps, 0, stream>>>(args);
        if (split == 2) return few_rows_kernel<T, kRows, 2, kMats><<<blocks, 32 * kWarps, 0, stream>>>(args);
        few_rows_kernel<T, kRows, 1, kMats><<<blocks, 32 * kWarps, 0, stream>>>(args);
      };
      switch (rows) {
        case 1:
          return go.template operator()<1>();
        case 2:
          return go.template operator()<2>();
        case 3:
          return go.template operator()<3>();
        default:
          return go.template operator()<4>();
      }
    }
  });
}

template <class T>
const T* ptr(const tensor::Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr;
}

}  // namespace

bool few_rows_linear(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                     const tensor::Tensor& out, const tensor::Tensor& addend) {
  if (!takes(x, weight, bias, out)) return false;
  if (addend.defined() && (addend.dim() != 2 || addend.sizes() != out.sizes() || !same_kind(addend, x))) return false;
  launch<1>("cudnn::kernels::few_rows_linear", x, weight.size(0), [&]<class T>(FewRowsArgs<T>& a) {
    a.w[0] = ptr<T>(weight), a.b[0] = ptr<T>(bias), a.addend = ptr<T>(addend);
    a.y[0] = static_cast<T*>(out.raw_data());
  });
  return true;
}

bool few_rows_linear_activated(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                               const tensor::Tensor& out, nn::Activation mode, const tensor::Tensor& activated) {
  if (mode != nn::Activation::GELU && mode != nn::Activation::GELUTanh) return false;
  if (!takes(x, weight, bias, out) || !takes(x, weight, tensor::Tensor(), activated)) return false;
  launch<1>("cudnn::kernels::few_rows_linear_activated", x, weight.size(0), [&]<class T>(FewRowsArgs<T>& a) {
    a.w[0] = ptr<T>(weight), a.b[0] = ptr<T>(bias);
    a.y[0] = static_cast<T*>(out.raw_data());
    a.h = static_cast<T*>(activated.raw_data());
    a.act = mode == nn::Activation::GELU ? 1 : 2;
  });
  return true;
}

bool few_rows_gated(const tensor::Tensor& x, const tensor::Tensor& gateWeight, const tensor::Tensor& gateBias,
                    const tensor::Tensor& upWeight, const tensor::Tensor& upBias, const tensor::Tensor& gate,
                    const tensor::Tensor& up, const tensor::Tensor& h) {
  if (!takes(x, gateWeight, gateBias, gate) || !takes(x, upWeight, upBias, up) ||
      !takes(x, upWeight, tensor::Tensor(), h)) {
    return false;
  }
  if (upWeight.sizes() != gateWeight.sizes() || gateBias.defined() != upBias.defined()) return false;
  launch<2>("cudnn::kernels::few_rows_gated", x, gateWeight.size(0), [&]<class T>(FewRowsArgs<T>& a) {
    a.w[0] = ptr<T>(gateWeight), a.w[1] = ptr<T>(upWeight), a.b[0] = ptr<T>(gateBias), a.b[1] = ptr<T>(upBias);
    a.y[0] = static_cast<T*>(gate.raw_data()), a.y[1] = static_cast<T*>(up.raw_data());
    a.h = static_cast<T*>(h.raw_data());
  });
  return true;
}

}  // namespace cudnn::kernels
