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
//   - overlapping windows (AlexNet's 3x3/2, ResNet's 3x3/2 pad 1): one thread per input
//     element gathers over the windows that contain it, in increasing output order (nn's
//     order of accumulation), finding each window's maximum again; the neighbours' reads hit
//     in cache.
#include <cuda_runtime.h>

#include <algorithm>

#include "cudnn/kernels/Dispatch.h"
#include "cudnn/ops/pool.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

struct Geometry {
  int64_t batch, channels;
  int in[3], out[3];  // D, H, W (D = 1 for 2-d pooling)
  int k[3], s[3], p[3];
};

template <class T>
using acc_of = tensor::acc_t<T>;

template <class T>
__device__ inline acc_of<T> widen(T v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return static_cast<float>(v);
}
template <class T>
__device__ inline T narrow(acc_of<T> v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return T(static_cast<float>(v));
}

// V adjacent channels, loaded and stored as one access.
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Window o along dim d, clipped to the input: [begin, end).
__device__ inline void clipped(const Geometry& g, int d, int o, int& begin, int& end) {
  const int start = o * g.s[d] - g.p[d];
  begin = max(start, 0);
  end = min(start + g.k[d], g.in[d]);
}

// The position (z * H + y) * W + x of each channel's maximum over the window [b, e), nn's rule.
template <class T, int V>
__device__ inline void window_argmax(const Geometry& g, const T* x, const int b[3], const int e[3], int arg[V]) {
  using A = acc_of<T>;
  const int64_t C = g.channels;
  A best[V];
  const int first = (b[0] * g.in[1] + b[1]) * g.in[2] + b[2];
  const Pack<T, V> f = *reinterpret_cast<const Pack<T, V>*>(x + first * C);
#pragma unroll
  for (int j = 0; j < V; ++j) {
    best[j] = widen(f.v[j]);
    arg[j] = first;
  }
  for (int z = b[0]; z < e[0]; ++z)
    for (int y = b[1]; y < e[1]; ++y)
      for (int w = b[2]; w < e[2]; ++w) {
        const int idx = (z * g.in[1] + y) * g.in[2] + w;
        const Pack<T, V> v = *reinterpret_cast<const Pack<T, V>*>(x + idx * C);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const A a = widen(v.v[j]);
          if (a > best[j] || (a != a && best[j] == best[j])) {  // Note [NaN and Inf]: the first NaN stays
            best[j] = a;
            arg[j] = idx;
          }
        }
      }
}

// One thread per cell of stride size and V channels (windows that do not overlap).
template <class T, int V>
__global__ void scatter_kernel(Geometry g, int cells1, int cells2, int64_t cells, const T* x, const T* dy, T* dx) {
  using A = acc_of<T>;
  const int64_t C = g.channels, groups = C / V;
  const int64_t total = g.batch * cells * groups;
  const int64_t in_plane = int64_t(g.in[0]) * g.in[1] * g.in[2];
  const int64_t out_plane = int64_t(g.out[0]) * g.out[1] * g.out[2];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i % groups) * V;
    int64_t rest = i / groups;
    const int o2 = static_cast<int>(rest % cells2);
    rest /= cells2;
    const int o1 = static_cast<int>(rest % cells1);
    rest /= cells1;
    const int o0 = static_cast<int>(rest % (cells / (int64_t(cells1) * cells2)));
    const int64_t n = rest / (cells / (int64_t(cells1) * cells2));
    const int o[3] = {o0, o1, o2};
    const T* xn = x + n * in_plane * C + c;
    T* dxn = dx + n * in_plane * C + c;
    int cb[3], ce[3], wb[3], we[3];
    bool has_window = true;
    for (int d = 0; d < 3; ++d) {
      const int start = o[d] * g.s[d] - g.p[d];
      cb[d] = max(start, 0);
      ce[d] = min(start + g.s[d], g.in[d]);
      has_window = has_window && o[d] < g.out[d];
      clipped(g, d, o[d], wb[d], we[d]);
    }
    int arg[V];
    A gy[V];
    if (has_window) {
      window_argmax<T, V>(g, xn, wb, we, arg);
      const int64_t oo = (int64_t(o0) * g.out[1] + o1) * g.out[2] + o2;
      const Pack<T, V> gp = *reinterpret_cast<const Pack<T, V>*>(dy + (n * out_plane + oo) * C + c);
#pragma unroll
      for (int j = 0; j < V; ++j) gy[j] = A(0) + widen(gp.v[j]);  // nn's 0 + gradOutput (-0 becomes +0)
    }
    for (int z = cb[0]; z < ce[0]; ++z)
      for (int y = cb[1]; y < ce[1]; ++y)
        for (int w = cb[2]; w < ce[2]; ++w) {
          const int idx = (z * g.in[1] + y) * g.in[2] + w;
          Pack<T, V> r;
#pragma unroll
          for (int j = 0; j < V; ++j) r.v[j] = narrow<T>(has_window && arg[j] == idx ? gy[j] : A(0));
          *reinterpret_cast<Pack<T, V>*>(dxn + idx * C) = r;
        }
  }
}

// Windows o along dim d that contain input i: o s - p <= i < o s - p + k.
__device__ inline void covering(const Geometry& g, int d, int i, int& lo, int& hi) {
  const int num = i + g.p[d] - g.k[d] + 1;
  lo = num <= 0 ? 0 : (num + g.s[d] - 1) / g.s[d];
  hi = min((i + g.p[d]) / g.s[d], g.out[d] - 1);
}

// One thread per input element and V channels (overlapping windows).
template <class T, int V>
__global__ void gather_kernel(Geometry g, const T* x, const T* dy, T* dx) {
  using A = acc_of<T>;
  const int64_t C = g.channels, groups = C / V;
  const int64_t in_plane = int64_t(g.in[0]) * g.in[1] * g.in[2];
  const int64_t out_plane = int64_t(g.out[0]) * g.out[1] * g.out[2];
  const int64_t total = g.batch * in_plane * groups;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i % groups) * V;
    const int64_t pos = i / groups;
    const int self = static_cast<int>(pos % in_plane);
    const int64_t n = pos / in_plane;
    const int at[3] = {self / (g.in[1] * g.in[2]), (self / g.in[2]) % g.in[1], self % g.in[2]};
    const T* xn = x + n * in_plane * C + c;
    const T* dyn = dy + n * out_plane * C + c;
    int lo[3], hi[3];
    for (int d = 0; d < 3; ++d) covering(g, d, at[d], lo[d], hi[d]);
    A grad[V];
#pragma unroll
    for (int j = 0; j < V; ++j) grad[j] = A(0);
    for (int od = lo[0]; od <= hi[0]; ++od)
      for (int oh = lo[1]; oh <= hi[1]; ++oh)
        for (int ow = lo[2]; ow <= hi[2]; ++ow) {
          int b[3], e[3], arg[V];
          clipped(g, 0, od, b[0], e[0]);
          clipped(g, 1, oh, b[1], e[1]);
          clipped(g, 2, ow, b[2], e[2]);
          window_argmax<T, V>(g, xn, b, e, arg);
          const int64_t o = (int64_t(od) * g.out[1] + oh) * g.out[2] + ow;
          const Pack<T, V> gp = *reinterpret_cast<const Pack<T, V>*>(dyn + o * C);
#pragma unroll
          for (int j = 0; j < V; ++j)
            if (arg[j] == self) grad[j] += widen(gp.v[j]);
        }
    Pack<T, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = narrow<T>(grad[j]);
    *reinterpret_cast<Pack<T, V>*>(dx + (n * in_plane + self) * C + c) = r;
  }
}

Geometry make_geometry(const Tensor& x, const Tensor& dy, const PoolParams& p) {
  Geometry g{};
  const int nd = static_cast<int>(p.ws.size());
  g.batch = x.size(0);
  g.channels = x.size(1);
  for (int d = 0; d < 3; ++d) {
    const int src = d - (3 - nd);  // 2-d pooling: depth 1 with a window of 1
    g.in[d] = src < 0 ? 1 : static_cast<int>(x.size(2 + src));
    g.out[d] = src < 0 ? 1 : static_cast<int>(dy.size(2 + src));
    g.k[d] = src < 0 ? 1 : p.ws[src];
    g.s[d] = src < 0 ? 1 : (p.stride.empty() ? p.ws[src] : p.stride[src]);
    g.p[d] = src < 0 ? 0 : (p.pad.empty() ? 0 : p.pad[src]);
  }
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

template <class T, int V>
void launch(const Geometry& g, const T* x, const T* dy, T* dx, cudaStream_t stream) {
  bool overlap = false;
  for (int d = 0; d < 3; ++d) overlap = overlap || g.k[d] > g.s[d];
  const int64_t groups = g.channels / V;
  if (!overlap) {
    int cells[3];
    for (int d = 0; d < 3; ++d) cells[d] = (g.in[d] + g.p[d] + g.s[d] - 1) / g.s[d];
    const int64_t all = int64_t(cells[0]) * cells[1] * cells[2];
    scatter_kernel<T, V><<<blocks_for(g.batch * all * groups), 256, 0, stream>>>(g, cells[1], cells[2], all, x, dy, dx);
    CUDA_CHECK_LAUNCH("max_pool_backward_channels_last (cells)");
  } else {
    const int64_t in_plane = int64_t(g.in[0]) * g.in[1] * g.in[2];
    gather_kernel<T, V><<<blocks_for(g.batch * in_plane * groups), 256, 0, stream>>>(g, x, dy, dx);
    CUDA_CHECK_LAUNCH("max_pool_backward_channels_last (gather)");
  }
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
  dispatch_floating("cudnn::pool_grad", x, [&](auto tag) {
    using T = decltype(tag);
    const auto* xp = static_cast<const T*>(x.raw_data());
    const auto* dyp = static_cast<const T*>(dy.raw_data());
    auto* dxp = static_cast<T*>(dx.raw_data());
    switch (vector_width<T>(g, x, dy, dx)) {
      case 8:
        if constexpr (sizeof(T) <= 2) launch<T, 8>(g, xp, dyp, dxp, stream);
        break;
      case 4:
        if constexpr (sizeof(T) <= 4) launch<T, 4>(g, xp, dyp, dxp, stream);
        break;
      case 2:
        launch<T, 2>(g, xp, dyp, dxp, stream);
        break;
      default:
        launch<T, 1>(g, xp, dyp, dxp, stream);
        break;
    }
  });
}

}  // namespace cudnn::kernels
