// kernels/Pooling.cpp
#include "nn/kernels/Pooling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace nn::kernels {

// Note [Pooling windows]
// Output o along a dim covers [o d - pad, o d - pad + k). The modules guarantee in >= 1 and
// pad <= k / 2, and pool_output_size keeps the last window's start below in + pad, so every
// window starts before the input's end and ends after its start: the part inside the input is
// never empty (max pooling always has a candidate, the exclude-pad divisor is never 0).

namespace {

__int128 floor_div(__int128 a, __int128 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One window along one dim: [begin, end) inside the input, and its length clipped to the
// padded input [-pad, in + pad) (the count_include_pad divisor).
struct Span {
  int64_t begin, end, padded;
};

std::vector<Span> spans_of(int64_t out, int64_t in, int64_t k, int64_t d, int64_t pad) {
  std::vector<Span> s(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    // 128 bits: a kernel or stride near 2^63 must not wrap (the clipped results fit)
    const __int128 start = __int128{o} * d - pad;
    const __int128 stop = std::min<__int128>(start + k, __int128{in} + pad);
    s[o] = {static_cast<int64_t>(std::max<__int128>(start, 0)), static_cast<int64_t>(std::min<__int128>(stop, in)),
            static_cast<int64_t>(std::min<__int128>(stop - start, INT64_MAX))};
  }
  return s;
}

// Below this many elements touched a call runs on one thread: a parallel region costs more
// than the work (and much more on a loaded machine).
constexpr int64_t kParallelGrain = 1 << 15;

// The windows of all three dims, computed once per call rather than per plane.
struct Windows {
  std::vector<Span> t, h, w;
  int64_t in_plane, out_plane;
  bool parallel;
  explicit Windows(const PoolGeometry& g)
      : t(spans_of(g.out[0], g.in[0], g.k[0], g.d[0], g.pad[0])),
        h(spans_of(g.out[1], g.in[1], g.k[1], g.d[1], g.pad[1])),
        w(spans_of(g.out[2], g.in[2], g.k[2], g.d[2], g.pad[2])),
        in_plane(g.in[0] * g.in[1] * g.in[2]),
        out_plane(g.out[0] * g.out[1] * g.out[2]),
        // an estimate, in double: kernel sizes from a config may be huge
        parallel(static_cast<double>(g.planes) *
                     (static_cast<double>(in_plane) + static_cast<double>(out_plane) * static_cast<double>(g.k[0]) *
                                                          static_cast<double>(g.k[1]) * static_cast<double>(g.k[2])) >=
                 kParallelGrain) {}
};

// In double: the padded window of a huge kernel is huge, and its product would overflow.
double divisor(const Span& st, const Span& sh, const Span& sw, bool count_include_pad) {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  return count_include_pad ? d(st.padded) * d(sh.padded) * d(sw.padded)
                           : d(st.end - st.begin) * d(sh.end - sh.begin) * d(sw.end - sw.begin);
}

}  // namespace

int64_t pool_output_size(int64_t in, int64_t k, int64_t d, int64_t pad, bool ceil_mode) {
  // The modules ask for 2 pad <= k, so span <= in; in 128 bits nothing below can wrap for
  // any kernel, stride or padding (Note [Checked sizes] in tensor/DType.cpp).
  using wide = __int128;
  const wide span = wide{in} + 2 * wide{pad} - k;
  wide out = (ceil_mode ? -floor_div(-span, d) : floor_div(span, d)) + 1;
  if (ceil_mode && out > 0 && (out - 1) * d >= wide{in} + pad) --out;
  return out > INT64_MAX ? INT64_MAX : out < INT64_MIN ? INT64_MIN : static_cast<int64_t>(out);
}

// Note [Branch-free max pooling]
// Which element of a window is largest is data-dependent and close to random, so a branch per
// comparison is mispredicted about half the time: with 2x2 windows that cost more than all the
// rest of the pooling (a quarter of the Fashion-MNIST step on one thread). The comparison
// below is a select the compiler turns into conditional moves; it keeps the same rule (the
// first maximum wins ties, the first NaN wins over numbers and stays: v != v is isnan).
// GCC turns a ternary on a float comparison back into a branch, so the select is done on the
// bits, with masks.
// I: the index type (int64_t, or a window position of the data's width: Lane<T>).
template <class T>
using Lane = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
template <class T, class I = int64_t>
inline void take_max(T v, I i, T& best, I& best_i) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  using IBits = std::make_unsigned_t<I>;
  const Bits take = static_cast<Bits>((v > best) | ((v != v) & (best == best)));
  const Bits m = Bits{0} - take;
  best = std::bit_cast<T>((std::bit_cast<Bits>(best) & ~m) | (std::bit_cast<Bits>(v) & m));
  const IBits mi = IBits{0} - static_cast<IBits>(take);
  best_i = static_cast<I>((static_cast<IBits>(best_i) & ~mi) | (static_cast<IBits>(i) & mi));
}

// 2x2 windows at stride 2 without padding (VGG's, the samples'): straight-line code per
// window, no span tables. The rule is take_max's, in the same row-major order.
template <class T>
bool max_pool_2x2(const PoolGeometry& g, const Windows& win, const T* input, T* output, int64_t* indices) {
  const bool fits = g.in[0] == 1 && g.k[0] == 1 && g.k[1] == 2 && g.k[2] == 2 && g.d[1] == 2 && g.d[2] == 2 &&
                    g.pad[0] == 0 && g.pad[1] == 0 && g.pad[2] == 0 && 2 * g.out[1] <= g.in[1] &&
                    2 * g.out[2] <= g.in[2];
  if (!fits) return false;
  const int64_t W = g.in[2], OH = g.out[1], OW = g.out[2];
#pragma omp parallel for schedule(static) if (win.parallel)
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* x = input + p * win.in_plane;
    T* y = output + p * win.out_plane;
    int64_t* idx = indices + p * win.out_plane;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const T* top = x + 2 * oh * W;
      const T* bottom = top + W;
      // simd: the compiler must if-convert the selects (and vectorises the row). The window's
      // element is chosen as 0..3 in an integer of the data's width, so the selects run as wide
      // as the floats (64-bit indices halved the lanes), and becomes an index at the store.
#pragma omp simd
      for (int64_t ow = 0; ow < OW; ++ow) {
        T best = top[2 * ow];
        Lane<T> which = 0;
        take_max(top[2 * ow + 1], Lane<T>{1}, best, which);
        take_max(bottom[2 * ow], Lane<T>{2}, best, which);
        take_max(bottom[2 * ow + 1], Lane<T>{3}, best, which);
        y[oh * OW + ow] = best;
        idx[oh * OW + ow] = 2 * oh * W + 2 * ow + (which & 1) + (which >> 1) * W;
      }
    }
  }
  return true;
}

namespace {

// The maximum of one window (spans along t, h, w), by take_max's rule in row-major order.
template <class T>
inline void window_max(const T* x, int64_t H, int64_t W, const Span& st, const Span& sh, const Span& sw, T& best,
                       int64_t& best_i) {
  best_i = (st.begin * H + sh.begin) * W + sw.begin;
  best = x[best_i];
  for (int64_t t = st.begin; t < st.end; ++t) {
    for (int64_t h = sh.begin; h < sh.end; ++h) {
      const int64_t row = (t * H + h) * W;
      for (int64_t w = sw.begin; w < sw.end; ++w) take_max(x[row + w], row + w, best, best_i);
    }
  }
}

// Note [Max pooling by rows]
// A 2-d window walked element by element runs a scalar chain of selects per output: ResNet's
// 3x3 stride-2 pooling of 64 x 112 x 112 took 4.8 ms on two cores, more than the convolution
// before it. Here a row of outputs is computed at once: the outputs whose window lies wholly
// inside the image width start from their window's first element and take each later one, in
// the window's row-major order, as one vectorised pass over the row per kernel offset (kH x kW
// passes over a row that stays in L1). The order per output, hence the value and index (first
// maximum, first NaN), is take_max's as in window_max, which the edge columns still use.
template <class T>
bool max_pool_rows(const PoolGeometry& g, const Windows& win, const T* input, T* output, int64_t* indices) {
  if (g.in[0] != 1 || g.k[0] != 1) return false;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], kW = g.k[2], dW = g.d[2];
  // spans are monotone, so the full-width windows are one run [lo, hi)
  const auto full = [&](int64_t ow) { return win.w[ow].end - win.w[ow].begin == kW; };
  int64_t lo = 0;
  while (lo < OW && !full(lo)) ++lo;
  int64_t hi = lo;
  while (hi < OW && full(hi)) ++hi;
  const int64_t first = lo < hi ? win.w[lo].begin - lo * dW : 0;  // column of output 0's window start
#pragma omp parallel for schedule(static) if (win.parallel)
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* x = input + p * win.in_plane;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const Span& sh = win.h[oh];
      T* y = output + p * win.out_plane + oh * OW;
      int64_t* idx = indices + p * win.out_plane + oh * OW;
      for (int64_t ow = 0; ow < lo; ++ow) window_max(x, H, W, win.t[0], sh, win.w[ow], y[ow], idx[ow]);
      for (int64_t ow = hi; ow < OW; ++ow) window_max(x, H, W, win.t[0], sh, win.w[ow], y[ow], idx[ow]);
      if (lo == hi) continue;  // no full-width window (then kW may exceed W by far)
      for (int64_t h = sh.begin; h < sh.end; ++h) {
        for (int64_t kw = 0; kw < kW; ++kw) {
          const int64_t row = h * W + first + kw;
          if (h == sh.begin && kw == 0) {
#pragma omp simd
            for (int64_t ow = lo; ow < hi; ++ow) {
              y[ow] = x[row + ow * dW];
              idx[ow] = row + ow * dW;
            }
            continue;
          }
          // simd: the compiler must if-convert the selects (and vectorises the row)
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) {
            T best = y[ow];
            int64_t best_i = idx[ow];
            take_max(x[row + ow * dW], row + ow * dW, best, best_i);
            y[ow] = best;
            idx[ow] = best_i;
          }
        }
      }
    }
  }
  return true;
}

}  // namespace

template <class T>
void max_pool_forward(const PoolGeometry& g, const T* input, T* output, int64_t* indices) {
  const Windows win(g);
  if (max_pool_2x2(g, win, input, output, indices) || max_pool_rows(g, win, input, output, indices)) return;
  const int64_t H = g.in[1], W = g.in[2];
#pragma omp parallel for schedule(static) if (win.parallel)
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* x = input + p * win.in_plane;
    T* y = output + p * win.out_plane;
    int64_t* idx = indices + p * win.out_plane;
    for (const Span& st : win.t) {
      for (const Span& sh : win.h) {
        for (const Span& sw : win.w) window_max(x, H, W, st, sh, sw, *y++, *idx++);
      }
    }
  }
}

template <class T>
void max_pool_backward(const PoolGeometry& g, const T* gradOutput, const int64_t* indices, T* gradInput) {
  const Windows win(g);
#pragma omp parallel for schedule(static) if (win.parallel)
  for (int64_t p = 0; p < g.planes; ++p) {
    T* gx = gradInput + p * win.in_plane;
    const T* gy = gradOutput + p * win.out_plane;
    const int64_t* idx = indices + p * win.out_plane;
    std::fill(gx, gx + win.in_plane, T(0));
    for (int64_t o = 0; o < win.out_plane; ++o) gx[idx[o]] += gy[o];
  }
}

template <class T>
void avg_pool_forward(const PoolGeometry& g, bool count_include_pad, const T* input, T* output) {
  const Windows win(g);
  const int64_t H = g.in[1], W = g.in[2];
#pragma omp parallel for schedule(static) if (win.parallel)
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* x = input + p * win.in_plane;
    T* y = output + p * win.out_plane;
    for (const Span& st : win.t) {
      for (const Span& sh : win.h) {
        for (const Span& sw : win.w) {
          T sum = 0;
          for (int64_t t = st.begin; t < st.end; ++t) {
            for (int64_t h = sh.begin; h < sh.end; ++h) {
              const T* row = x + (t * H + h) * W;
              for (int64_t w = sw.begin; w < sw.end; ++w) sum += row[w];
            }
          }
          *y++ = sum / static_cast<T>(divisor(st, sh, sw, count_include_pad));
        }
      }
    }
  }
}

template <class T>
void avg_pool_backward(const PoolGeometry& g, bool count_include_pad, const T* gradOutput, T* gradInput) {
  const Windows win(g);
  const int64_t H = g.in[1], W = g.in[2];
#pragma omp parallel for schedule(static) if (win.parallel)
  for (int64_t p = 0; p < g.planes; ++p) {
    T* gx = gradInput + p * win.in_plane;
    const T* gy = gradOutput + p * win.out_plane;
    std::fill(gx, gx + win.in_plane, T(0));
    for (const Span& st : win.t) {
      for (const Span& sh : win.h) {
        for (const Span& sw : win.w) {
          const T v = *gy++ / static_cast<T>(divisor(st, sh, sw, count_include_pad));
          for (int64_t t = st.begin; t < st.end; ++t) {
            for (int64_t h = sh.begin; h < sh.end; ++h) {
              T* row = gx + (t * H + h) * W;
              for (int64_t w = sw.begin; w < sw.end; ++w) row[w] += v;
            }
          }
        }
      }
    }
  }
}

template void max_pool_forward<float>(const PoolGeometry&, const float*, float*, int64_t*);
template void max_pool_forward<double>(const PoolGeometry&, const double*, double*, int64_t*);
template void max_pool_backward<float>(const PoolGeometry&, const float*, const int64_t*, float*);
template void max_pool_backward<double>(const PoolGeometry&, const double*, const int64_t*, double*);
template void avg_pool_forward<float>(const PoolGeometry&, bool, const float*, float*);
template void avg_pool_forward<double>(const PoolGeometry&, bool, const double*, double*);
template void avg_pool_backward<float>(const PoolGeometry&, bool, const float*, float*);
template void avg_pool_backward<double>(const PoolGeometry&, bool, const double*, double*);

}  // namespace nn::kernels
