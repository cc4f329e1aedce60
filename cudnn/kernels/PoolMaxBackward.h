// PoolMaxBackward.h: one thread's work in the channels-last max-pooling gradient (Note
// [Channels-last max-pooling backward] in PoolMaxBackward.cu), written for host and device alike:
// the .cu's kernels run it once per thread, and tests/cudnn/test_PoolMaxBackward.cpp runs it on
// the CPU against nn's pooling kernels, so the rule is checked on machines without a GPU too.
// Data are dense [N x (D x) H x W x C] (channels-last); 2-d pooling is 3-d with depth 1.
#pragma once

#include <cstdint>

#include "tensor/DType.h"
#include "tensor/cuda/Pack.h"

namespace cudnn::kernels::max_pool_cl {

struct Geometry {
  int64_t batch, channels;
  int in[3], out[3];  // D, H, W (D = 1 for 2-d pooling)
  int k[3], s[3], p[3];
};

template <class T>
using acc_of = tensor::acc_t<T>;

template <class T>
TENSOR_HD acc_of<T> widen(T v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return static_cast<float>(v);
}
template <class T>
TENSOR_HD T narrow(acc_of<T> v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return T(static_cast<float>(v));
}

// V adjacent channels, loaded and stored as one access.
using tensor::cuda::Pack;

TENSOR_HD int64_t in_plane(const Geometry& g) { return int64_t(g.in[0]) * g.in[1] * g.in[2]; }
TENSOR_HD int64_t out_plane(const Geometry& g) { return int64_t(g.out[0]) * g.out[1] * g.out[2]; }

// Whether some input lies in two windows (kernel > stride in a dim): the two-pass scheme.
TENSOR_HD bool overlapping(const Geometry& g) { return g.k[0] > g.s[0] || g.k[1] > g.s[1] || g.k[2] > g.s[2]; }

// Cells of stride size along dim d, enough to cover [-p, in): cell o is [o s - p, o s - p + s).
TENSOR_HD int cells(const Geometry& g, int d) { return (g.in[d] + g.p[d] + g.s[d] - 1) / g.s[d]; }

// How many threads a launch needs: one per cell (or input element) and V channels.
TENSOR_HD int64_t threads(const Geometry& g, int V) {
  const int64_t per_image = overlapping(g) ? in_plane(g) : int64_t(cells(g, 0)) * cells(g, 1) * cells(g, 2);
  return g.batch * per_image * (g.channels / V);
}
// The first pass of the two-pass scheme: one thread per output and V channels.
TENSOR_HD int64_t argmax_threads(const Geometry& g, int V) { return g.batch * out_plane(g) * (g.channels / V); }

// Whether a window's offsets fit a byte (the scratch of the two-pass scheme is then uint8, half
// of float16's dy; larger windows take int32).
TENSOR_HD bool byte_offsets(const Geometry& g) { return g.k[0] * g.k[1] * g.k[2] <= 256; }

// Window o along dim d, clipped to the input: [begin, end). Torch's sizing keeps it non-empty.
TENSOR_HD void clipped(const Geometry& g, int d, int o, int& begin, int& end) {
  const int start = o * g.s[d] - g.p[d];
  begin = start > 0 ? start : 0;
  end = start + g.k[d] < g.in[d] ? start + g.k[d] : g.in[d];
}

// The offset of input `at` in window o's unclipped box, ((z - z0) kH + y - y0) kW + x - x0.
TENSOR_HD int window_offset(const Geometry& g, const int o[3], const int at[3]) {
  int off = 0;
  for (int d = 0; d < 3; ++d) off = off * g.k[d] + at[d] - (o[d] * g.s[d] - g.p[d]);
  return off;
}

// Each channel's maximum over the window o, clipped to [b, e), by nn's rule (nn/kernels/
// Pooling.h): the first maximum in row-major order wins a tie, the first NaN wins over numbers
// and stays (Note [NaN and Inf] in nn/kernels/Activation.h). arg: its position (z H + y) W + x,
// or with kOffset its window_offset.
template <class T, int V, bool kOffset = false>
TENSOR_HD void window_argmax(const Geometry& g, const T* x, const int o[3], const int b[3], const int e[3],
                             int arg[V]) {
  using A = acc_of<T>;
  const int64_t C = g.channels;
  A best[V];
  const int first = (b[0] * g.in[1] + b[1]) * g.in[2] + b[2];
  const Pack<T, V> f = *reinterpret_cast<const Pack<T, V>*>(x + first * C);
  for (int j = 0; j < V; ++j) {
    best[j] = widen(f.v[j]);
    arg[j] = kOffset ? window_offset(g, o, b) : first;
  }
  for (int z = b[0]; z < e[0]; ++z)
    for (int y = b[1]; y < e[1]; ++y)
      for (int w = b[2]; w < e[2]; ++w) {
        const int idx = (z * g.in[1] + y) * g.in[2] + w;
        const int at[3] = {z, y, w};
        const Pack<T, V> v = *reinterpret_cast<const Pack<T, V>*>(x + idx * C);
        for (int j = 0; j < V; ++j) {
          const A a = widen(v.v[j]);
          if (a > best[j] || (a != a && best[j] == best[j])) {
            best[j] = a;
            arg[j] = kOffset ? window_offset(g, o, at) : idx;
          }
        }
      }
}

// Thread i of the cell scheme (windows that do not overlap, kernel <= stride): cell o holds
// window o and the gap after it; the thread writes every element of its cell, the gradient at
// the window's maximum and zero elsewhere (also in cells past the last window).
template <class T, int V, class Idx = int64_t>
TENSOR_HD void cell_thread(const Geometry& g, Idx i, const T* x, const T* dy, T* dx) {
  using A = acc_of<T>;
  const Idx C = static_cast<Idx>(g.channels), groups = C / V;
  const Idx c = (i % groups) * V;
  Idx rest = i / groups;
  int o[3];
  for (int d = 2; d >= 0; --d) {
    o[d] = static_cast<int>(rest % cells(g, d));
    rest /= cells(g, d);
  }
  const Idx n = rest;
  const T* xn = x + n * static_cast<Idx>(in_plane(g)) * C + c;
  T* dxn = dx + n * static_cast<Idx>(in_plane(g)) * C + c;
  int cb[3], ce[3], wb[3], we[3];
  bool has_window = true;
  for (int d = 0; d < 3; ++d) {
    const int start = o[d] * g.s[d] - g.p[d];
    cb[d] = start > 0 ? start : 0;
    ce[d] = start + g.s[d] < g.in[d] ? start + g.s[d] : g.in[d];
    has_window = has_window && o[d] < g.out[d];
    clipped(g, d, o[d], wb[d], we[d]);
  }
  int arg[V];
  A gy[V];
  if (has_window) {
    window_argmax<T, V>(g, xn, o, wb, we, arg);
    const Idx oo = (Idx(o[0]) * g.out[1] + o[1]) * g.out[2] + o[2];
    const Pack<T, V> gp = *reinterpret_cast<const Pack<T, V>*>(dy + (n * static_cast<Idx>(out_plane(g)) + oo) * C + c);
    for (int j = 0; j < V; ++j) gy[j] = A(0) + widen(gp.v[j]);  // nn's 0 + gradOutput (-0 becomes +0)
  } else {
    for (int j = 0; j < V; ++j) {
      arg[j] = -1;
      gy[j] = A(0);
    }
  }
  for (int z = cb[0]; z < ce[0]; ++z)
    for (int y = cb[1]; y < ce[1]; ++y)
      for (int w = cb[2]; w < ce[2]; ++w) {
        const int idx = (z * g.in[1] + y) * g.in[2] + w;
        Pack<T, V> r;
        for (int j = 0; j < V; ++j) r.v[j] = narrow<T>(arg[j] == idx ? gy[j] : A(0));
        *reinterpret_cast<Pack<T, V>*>(dxn + idx * C) = r;
      }
}

// Windows o along dim d that contain input i: o s - p <= i < o s - p + k.
TENSOR_HD void covering(const Geometry& g, int d, int i, int& lo, int& hi) {
  const int num = i + g.p[d] - g.k[d] + 1;
  lo = num <= 0 ? 0 : (num + g.s[d] - 1) / g.s[d];
  const int last = (i + g.p[d]) / g.s[d];
  hi = last < g.out[d] - 1 ? last : g.out[d] - 1;
}

// Pass (a) of the two-pass scheme (overlapping windows), thread i: one output and V channels;
// writes each channel's argmax as its window_offset into `arg` (dy's layout, index type I).
template <class T, class I, int V, class Idx = int64_t>
TENSOR_HD void argmax_thread(const Geometry& g, Idx i, const T* x, I* arg) {
  const Idx C = static_cast<Idx>(g.channels), groups = C / V;
  const Idx c = (i % groups) * V;
  Idx rest = i / groups;
  int o[3], b[3], e[3];
  for (int d = 2; d >= 0; --d) {
    o[d] = static_cast<int>(rest % g.out[d]);
    rest /= g.out[d];
  }
  const Idx n = rest;
  for (int d = 0; d < 3; ++d) clipped(g, d, o[d], b[d], e[d]);
  int best[V];
  window_argmax<T, V, true>(g, x + n * static_cast<Idx>(in_plane(g)) * C + c, o, b, e, best);
  Pack<I, V> r;
  for (int j = 0; j < V; ++j) r.v[j] = static_cast<I>(best[j]);
  const Idx oo = (Idx(o[0]) * g.out[1] + o[1]) * g.out[2] + o[2];
  *reinterpret_cast<Pack<I, V>*>(arg + (n * static_cast<Idx>(out_plane(g)) + oo) * C + c) = r;
}

// Pass (b), thread i: one input element and V channels, summing over the windows that contain
// it in increasing output order (nn's order of accumulation) the gradients of those whose
// argmax (pass (a)'s) it is: V bytes of `arg` per window instead of pass (a)'s window scans.
template <class T, class I, int V, class Idx = int64_t>
TENSOR_HD void gather_thread(const Geometry& g, Idx i, const I* arg, const T* dy, T* dx) {
  using A = acc_of<T>;
  const Idx C = static_cast<Idx>(g.channels), groups = C / V;
  const Idx c = (i % groups) * V;
  const Idx pos = i / groups;
  const Idx plane = static_cast<Idx>(in_plane(g));
  const int self = static_cast<int>(pos % plane);
  const Idx n = pos / plane;
  const int at[3] = {self / (g.in[1] * g.in[2]), (self / g.in[2]) % g.in[1], self % g.in[2]};
  const Idx first = n * static_cast<Idx>(out_plane(g)) * C + c;
  int lo[3], hi[3];
  for (int d = 0; d < 3; ++d) covering(g, d, at[d], lo[d], hi[d]);
  A grad[V];
  for (int j = 0; j < V; ++j) grad[j] = A(0);
  int o[3];
  for (o[0] = lo[0]; o[0] <= hi[0]; ++o[0])
    for (o[1] = lo[1]; o[1] <= hi[1]; ++o[1])
      for (o[2] = lo[2]; o[2] <= hi[2]; ++o[2]) {
        const int off = window_offset(g, o, at);
        const Idx at_o = first + ((Idx(o[0]) * g.out[1] + o[1]) * g.out[2] + o[2]) * C;
        const Pack<I, V> a = *reinterpret_cast<const Pack<I, V>*>(arg + at_o);
        bool any = false;
        for (int j = 0; j < V; ++j) any = any || int(a.v[j]) == off;
        if (!any) continue;  // dy is read only where some channel's maximum is here
        const Pack<T, V> gp = *reinterpret_cast<const Pack<T, V>*>(dy + at_o);
        for (int j = 0; j < V; ++j)
          if (int(a.v[j]) == off) grad[j] += widen(gp.v[j]);
      }
  Pack<T, V> r;
  for (int j = 0; j < V; ++j) r.v[j] = narrow<T>(grad[j]);
  *reinterpret_cast<Pack<T, V>*>(dx + (n * plane + self) * C + c) = r;
}

}  // namespace cudnn::kernels::max_pool_cl
