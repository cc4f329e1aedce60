// PoolMaxBackward.cu: the max-pooling gradient of channels-last (N(D)HWC) data, in place of
// cudnnPoolingBackward, which is 2-3.6x slower than PyTorch's kernel on NHWC data
// (docs/performance.md, "Where VGG-11's channels-last step loses").
//
// Note [Channels-last max-pooling backward]
// Each window's maximum is found again from x, by nn's rule (nn/kernels/Pooling.h: the first
// maximum in row-major order wins a tie, the first NaN wins over numbers), so the gradient is
// nn::SpatialMaxPooling's exactly, and needs neither the forward's output (which a later
// in-place layer may have changed) nor indices. Threads run over channels fastest, V adjacent
// channels per thread in one 4- to 16-byte load, so every access is coalesced. Two schemes, both
// deterministic and free of atomics:
//   - windows that do not overlap (kernel <= stride in every dim; VGG's 2x2/2): the input is cut
//     into cells of stride size, cell o holding window o and the gap after it; one thread per
//     cell finds the maximum of its window and writes every element of the cell (the gradient
//     at the maximum, zero elsewhere), so x and dy are read once and dx written once;
//   - overlapping windows (AlexNet's 3x3/2, ResNet's 3x3/2 pad 1), two passes: (a) one thread
//     per output finds its window's maximum and writes its offset in the window (a byte for
//     windows of up to 256 elements) into a scratch the shape of dy, leased from the caching
//     allocator (Note [Workspaces] in cudnn/core/Handle.h: no allocation once warm, the graph's
//     pool under capture); (b) one thread per input element gathers over the windows that
//     contain it, in increasing output order (nn's order of accumulation), the gradients of
//     those whose offset points at it. Each window is scanned once, not once per input in it:
//     the one-pass gather that found every window's maximum again (up to 4 windows x 9 loads
//     per input at 3x3/2) was slower than cuDNN's call on AlexNet's step (4.38 ms against
//     3.78 on the H100, docs/performance.md).
// Each thread splits its index into channels, position and image by division, in 32-bit
// arithmetic where the tensors allow it (0.386 -> 0.336 ms for the two passes of ResNet-50's stem
// pool at batch 64, H100); cuDNN's call took 0.442 ms, and the step is faster with ours, so
// pool.backward=auto takes them for overlapping windows too (docs/performance.md).
// One thread's work is in PoolMaxBackward.h, for host and device: tests/cudnn/
// test_PoolMaxBackward.cpp checks it against nn's kernels on the CPU.
#include <cuda_runtime.h>

#include <algorithm>

#include "cudnn/core/Handle.h"
#include "cudnn/kernels/Dispatch.h"
#include "cudnn/kernels/Pool.h"
#include "cudnn/kernels/PoolDims.h"
#include "cudnn/kernels/PoolMaxBackward.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

using max_pool_cl::Geometry;

// Idx: the index arithmetic's type; 32-bit divisions are the cheaper, so tensors that allow it
// take 32-bit indices (Note [Channels-last max-pooling backward]).
template <class T, int V, class Idx>
__global__ void cell_kernel(Geometry g, Idx total, const T* x, const T* dy, T* dx) {
  for (Idx i = Idx(blockIdx.x) * Idx(blockDim.x) + Idx(threadIdx.x); i < total; i += Idx(gridDim.x) * Idx(blockDim.x))
    max_pool_cl::cell_thread<T, V, Idx>(g, i, x, dy, dx);
}

template <class T, class I, int V, class Idx>
__global__ void argmax_kernel(Geometry g, Idx total, const T* x, I* arg) {
  for (Idx i = Idx(blockIdx.x) * Idx(blockDim.x) + Idx(threadIdx.x); i < total; i += Idx(gridDim.x) * Idx(blockDim.x))
    max_pool_cl::argmax_thread<T, I, V, Idx>(g, i, x, arg);
}

template <class T, class I, int V, class Idx>
__global__ void gather_kernel(Geometry g, Idx total, const I* arg, const T* dy, T* dx) {
  for (Idx i = Idx(blockIdx.x) * Idx(blockDim.x) + Idx(threadIdx.x); i < total; i += Idx(gridDim.x) * Idx(blockDim.x))
    max_pool_cl::gather_thread<T, I, V, Idx>(g, i, arg, dy, dx);
}

Geometry make_geometry(const Tensor& x, const Tensor& dy, const PoolParams& p) {
  Geometry g{};
  g.batch = x.size(0);
  g.channels = x.size(1);
  set_pool_dims(g, x.sizes(), dy.sizes(), p);
  return g;
}

int blocks_for(int64_t threads) { return static_cast<int>(std::min<int64_t>((threads + 255) / 256, 1 << 20)); }

// The widest V (channels per access, at most 16 bytes) that divides C and keeps every access aligned.
template <class T>
int vector_width(const Geometry& g, const Tensor& x, const Tensor& dy, const Tensor& dx) {
  for (int v = static_cast<int>(16 / sizeof(T)); v > 1; v /= 2) {
    const auto bytes = static_cast<uintptr_t>(v * sizeof(T));
    const bool aligned = reinterpret_cast<uintptr_t>(x.raw_data()) % bytes == 0 &&
                         reinterpret_cast<uintptr_t>(dy.raw_data()) % bytes == 0 &&
                         reinterpret_cast<uintptr_t>(dx.raw_data()) % bytes == 0;
    if (g.channels % v == 0 && aligned) return v;
  }
  return 1;
}

template <class T, class I, int V, class Idx>
void two_passes(const Geometry& g, const T* x, const T* dy, T* dx, cudaStream_t stream) {
  const int64_t outputs = max_pool_cl::argmax_threads(g, V), inputs = max_pool_cl::threads(g, V);
  // given back when this returns: the stream orders the gather before any reuse (Note [Workspaces])
  Workspace scratch(static_cast<size_t>(outputs * V) * sizeof(I));
  auto* arg = static_cast<I*>(scratch.data());
  argmax_kernel<T, I, V, Idx><<<blocks_for(outputs), 256, 0, stream>>>(g, static_cast<Idx>(outputs), x, arg);
  CUDA_CHECK_LAUNCH("max_pool_backward_channels_last (argmax)");
  gather_kernel<T, I, V, Idx><<<blocks_for(inputs), 256, 0, stream>>>(g, static_cast<Idx>(inputs), arg, dy, dx);
  CUDA_CHECK_LAUNCH("max_pool_backward_channels_last (gather)");
}

template <class T, int V, class Idx>
void launch_indexed(const Geometry& g, const T* x, const T* dy, T* dx, cudaStream_t stream) {
  if (!max_pool_cl::overlapping(g)) {
    const int64_t n = max_pool_cl::threads(g, V);
    cell_kernel<T, V, Idx><<<blocks_for(n), 256, 0, stream>>>(g, static_cast<Idx>(n), x, dy, dx);
    CUDA_CHECK_LAUNCH("max_pool_backward_channels_last (cells)");
  } else if (max_pool_cl::byte_offsets(g)) {
    two_passes<T, uint8_t, V, Idx>(g, x, dy, dx, stream);
  } else {
    two_passes<T, int32_t, V, Idx>(g, x, dy, dx, stream);
  }
}

// 32-bit indices where every element offset, and the grid-stride loop's last step past the
// end (at most blocks_for's 2^20 blocks of 256 threads), stay below 2^31.
template <class T, int V>
void launch(const Geometry& g, int64_t largest, const T* x, const T* dy, T* dx, cudaStream_t stream) {
  if (largest < (int64_t(1) << 30))
    launch_indexed<T, V, int32_t>(g, x, dy, dx, stream);
  else
    launch_indexed<T, V, int64_t>(g, x, dy, dx, stream);
}

}  // namespace

bool channels_last_max_backward_applies(const Tensor& x, const Tensor& dy, const Tensor& dx, const PoolParams& p) {
  const bool max = p.mode == PoolMode::Max || p.mode == PoolMode::MaxDeterministic;
  const auto cl = tensor::MemoryFormat::ChannelsLast;
  return max && (x.dim() == 4 || x.dim() == 5) && x.dim() == static_cast<int64_t>(p.ws.size()) + 2 &&
         x.is_contiguous(cl) && dy.is_contiguous(cl) && dx.is_contiguous(cl);
}

void max_pool_backward_channels_last(const Tensor& x, const Tensor& dy, const Tensor& dx, const PoolParams& p) {
  const Geometry g = make_geometry(x, dy, p);
  if (x.numel() == 0) return;
  // in-plane offsets are int: a plane of 2^31 elements would need 64-bit positions
  if (int64_t(g.in[0]) * g.in[1] * g.in[2] >= (int64_t(1) << 31)) {
    throw tensor::Error("cudnn::pool_grad: expected fewer than 2^31 spatial positions per image, got " +
                        x.description());
  }
  auto stream = static_cast<cudaStream_t>(tensor::cuda::stream(x.device().index));
  const int64_t largest = std::max(x.numel(), dy.numel());
  dispatch_floating("cudnn::pool_grad", x, [&](auto tag) {
    using T = decltype(tag);
    const auto* xp = static_cast<const T*>(x.raw_data());
    const auto* dyp = static_cast<const T*>(dy.raw_data());
    auto* dxp = static_cast<T*>(dx.raw_data());
    switch (vector_width<T>(g, x, dy, dx)) {
      case 8:
        if constexpr (sizeof(T) <= 2) launch<T, 8>(g, largest, xp, dyp, dxp, stream);
        break;
      case 4:
        if constexpr (sizeof(T) <= 4) launch<T, 4>(g, largest, xp, dyp, dxp, stream);
        break;
      case 2:
        launch<T, 2>(g, largest, xp, dyp, dxp, stream);
        break;
      default:
        launch<T, 1>(g, largest, xp, dyp, dxp, stream);
        break;
    }
  });
}

}  // namespace cudnn::kernels
