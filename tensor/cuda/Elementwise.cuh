// Elementwise.cuh: the launch plumbing of the tensor layer's element-wise kernels, shared with
// the cudnn backend's own kernels (cudnn/kernels/*.cu) so that every element-wise pass of the
// library coalesces dimensions and moves 16-byte packs the same way (Note [Packed element-wise
// kernels]). launch_elementwise<N, Uniform>(operands, f, op) runs a functor f(char* (&p)[N]) over
// every element of operands[0]'s shape, p[k] pointing at operand k's element; operand 0 is the
// one f writes. Everything runs on the device's stream (Note [One stream per device], Cuda.h).
// Include only from .cu files.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tensor/Cuda.h"
#include "tensor/Tensor.h"
#include "tensor/cuda/CudaCheck.h"
#include "tensor/cuda/Pack.h"

namespace tensor::cuda::elementwise {

constexpr int kMaxDims = 16;   // after coalescing; the CPU kernels allow as many
constexpr int kThreads = 256;  // per block, every kernel

int multiprocessor_count(int device);  // cached per device

// Enough blocks to fill the device a few times over; the kernels loop over the rest.
inline unsigned grid_for(int64_t work, int device) {
  const int64_t wanted = (work + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(multiprocessor_count(device)) * 16;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(wanted, cap)));
}

inline cudaStream_t stream_of(int device) { return static_cast<cudaStream_t>(cuda::stream(device)); }

// Sizes and byte strides of N operands (operand 0 is the output), dimensions coalesced.
template <int N>
struct Layout {
  int nd = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];
  char* base[N];
};

template <int N>
Layout<N> make_layout(const std::array<const Tensor*, N>& tensors, const char* op) {
  const Shape& sizes = tensors[0]->sizes();
  Layout<N> layout;
  for (int k = 0; k < N; ++k) {
    layout.base[k] = static_cast<char*>(tensors[k]->raw_data());
  }
  // Drop size-1 dims, visit the rest in operand 0's memory order (Note [Memory order] in
  // CpuKernels.cpp: dense operands of one memory format merge into one flat dim) and merge
  // a dim into the previous one where every operand allows it.
  const Shape& out_strides = tensors[0]->strides();
  std::vector<size_t> order;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) order.push_back(d);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out_strides[a] > out_strides[b]; });
  for (const size_t d : order) {
    int64_t stride[N];
    for (int k = 0; k < N; ++k) {
      stride[k] = tensors[k]->strides()[d] * static_cast<int64_t>(itemsize(tensors[k]->dtype()));
    }
    bool mergeable = layout.nd > 0;
    for (int k = 0; k < N && mergeable; ++k) {
      mergeable = layout.strides[k][layout.nd - 1] == stride[k] * sizes[d];
    }
    if (mergeable) {
      layout.sizes[layout.nd - 1] *= sizes[d];
      for (int k = 0; k < N; ++k) layout.strides[k][layout.nd - 1] = stride[k];
      continue;
    }
    TENSOR_CHECK(layout.nd < kMaxDims, op, ": at most ", kMaxDims, " non-mergeable dimensions on CUDA, got ",
                 tensors[0]->description());
    layout.sizes[layout.nd] = sizes[d];
    for (int k = 0; k < N; ++k) layout.strides[k][layout.nd] = stride[k];
    ++layout.nd;
  }
  if (layout.nd == 0) {  // one element
    layout.nd = 1;
    layout.sizes[0] = 1;
    for (int k = 0; k < N; ++k) layout.strides[k][0] = 0;
  }
  return layout;
}

template <class Index, int N>
__device__ __forceinline__ void element_pointers(const Layout<N>& layout, Index i, char* (&p)[N]) {
  for (int k = 0; k < N; ++k) p[k] = layout.base[k];
  for (int d = layout.nd - 1; d >= 0; --d) {
    const Index size = static_cast<Index>(layout.sizes[d]);
    const Index coord = i % size;
    i /= size;
    for (int k = 0; k < N; ++k) p[k] += static_cast<int64_t>(coord) * layout.strides[k][d];
  }
}

// Grid-stride loop calling f(p) with p[k] pointing at element i of operand k.
template <int N, class F>
__global__ void __launch_bounds__(kThreads) elementwise_kernel(Layout<N> layout, int64_t numel, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const bool small = numel <= static_cast<int64_t>(UINT32_MAX);  // 32-bit divisions are cheaper
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += step) {
    char* p[N];
    if (layout.nd == 1) {  // contiguous or evenly strided: no divisions
      for (int k = 0; k < N; ++k) p[k] = layout.base[k] + i * layout.strides[k][0];
    } else if (small) {
      element_pointers(layout, static_cast<uint32_t>(i), p);
    } else {
      element_pointers(layout, i, p);
    }
    f(p);
  }
}

// Note [Packed element-wise kernels]
// One 2-byte element per thread and instruction keeps too few bytes in flight to reach HBM's
// bandwidth: a float16 residual add of ResNet-50 ran at about a third of it (H100). Where
// every operand is contiguous, 16-byte aligned and of one element type T, each thread moves
// 16-byte packs instead: it loads the inputs' packs, applies f to the V elements in
// registers, and stores the output's pack (an in-place operand is read whole before it is
// written). f must only write operand 0 (the functors passed a Uniform type do). Block 0
// takes the last numel % V elements one by one.

template <int N, class T, class F>
__global__ void __launch_bounds__(kThreads) packed_kernel(Layout<N> layout, int64_t packs, int64_t tail, F f) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  using P = Pack<T, V>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += step) {
    P v[N];
#pragma unroll
    for (int k = 1; k < N; ++k) v[k] = reinterpret_cast<const P*>(layout.base[k])[i];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      char* p[N];
#pragma unroll
      for (int k = 0; k < N; ++k) p[k] = reinterpret_cast<char*>(&v[k].v[j]);
      f(p);
    }
    reinterpret_cast<P*>(layout.base[0])[i] = v[0];
  }
  if (blockIdx.x == 0 && threadIdx.x < tail) {
    char* p[N];
    for (int k = 0; k < N; ++k) p[k] = layout.base[k] + (packs * V + threadIdx.x) * static_cast<int64_t>(sizeof(T));
    f(p);
  }
}

// Runs f over every element of operands[0]'s shape on operands[0]'s device. Uniform: the
// element type of every operand when they all share one (packs then apply), else void.
template <int N, class Uniform = void, class F>
void launch_elementwise(const std::array<const Tensor*, N>& operands, F f, const char* op) {
  const Tensor& out = *operands[0];
  const int64_t numel = out.numel();
  if (numel == 0) return;
  const int device = out.device().index;
  cuda::DeviceGuard guard(device);
  const Layout<N> layout = make_layout<N>(operands, op);
  if constexpr (!std::is_void_v<Uniform>) {  // Note [Packed element-wise kernels]
    constexpr int64_t V = 16 / sizeof(Uniform);
    bool packed = layout.nd == 1 && numel >= V;
    for (int k = 0; k < N && packed; ++k) {
      packed = layout.strides[k][0] == static_cast<int64_t>(sizeof(Uniform)) &&
               reinterpret_cast<uintptr_t>(layout.base[k]) % 16 == 0;
    }
    if (packed) {
      const int64_t packs = numel / V;
      packed_kernel<N, Uniform>
          <<<grid_for(packs, device), kThreads, 0, stream_of(device)>>>(layout, packs, numel % V, f);
      CUDA_CHECK_LAUNCH("tensor elementwise kernel (packed)");
      return;
    }
  }
  elementwise_kernel<N><<<grid_for(numel, device), kThreads, 0, stream_of(device)>>>(layout, numel, f);
  CUDA_CHECK_LAUNCH("tensor elementwise kernel");
}

}  // namespace tensor::cuda::elementwise
