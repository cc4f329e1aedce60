// RNN.cpp: the cells as branch-free element loops between tensor::blas::gemm calls. The
// activations are VecMath's (float: vectorisable exp/tanh; double: the standard library).
#include "nn/kernels/RNN.h"

#include <algorithm>
#include <cstring>

#include "nn/kernels/VecMath.h"
#include "tensor/Blas.h"

namespace nn::kernels {

namespace {

using tensor::blas::gemm;

template <class T>
inline T sigmoid(T v) {
  return T(1) / (T(1) + vexp(-v));
}

inline bool active(const RNNLayerGeometry& g, int64_t t, int64_t b) {
  return g.lengths == nullptr || t < g.lengths[b];
}

template <class T>
void copy_or_zero(T* dst, const T* src, int64_t n) {
  if (src) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
  } else {
    std::fill(dst, dst + n, T(0));
  }
}

// One step's cell for batch entry b: `x` the input projection row (b_ih included, overwritten
// by the activated gates), `hh` the recurrent projection row (b_hh included), h/c the state
// rows (updated), `extra` the saved row (LSTM c_t, GRU W_hn h + b_hn).
template <class T>
inline void cell_forward(RNNCell cell, int64_t H, T* x, const T* hh, T* h, T* c, T* extra) {
  switch (cell) {
    case RNNCell::ReLU:
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        // See Note [NaN and Inf]: the comparison is false for a NaN, which keeps it, as cuDNN's
        // CUDNN_RNN_RELU does (measured by tests/cudnn/test_BadInput.cpp)
        const T v = x[j] + hh[j];
        x[j] = h[j] = v <= T(0) ? T(0) : v;
      }
      return;
    case RNNCell::Tanh:
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) x[j] = h[j] = vtanh(x[j] + hh[j]);
      return;
    case RNNCell::LSTM:
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const T i = sigmoid(x[j] + hh[j]);
        const T f = sigmoid(x[H + j] + hh[H + j]);
        const T gg = vtanh(x[2 * H + j] + hh[2 * H + j]);
        const T o = sigmoid(x[3 * H + j] + hh[3 * H + j]);
        const T cn = f * c[j] + i * gg;
        x[j] = i;
        x[H + j] = f;
        x[2 * H + j] = gg;
        x[3 * H + j] = o;
        c[j] = extra[j] = cn;
        h[j] = o * vtanh(cn);
      }
      return;
    case RNNCell::GRU:
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const T r = sigmoid(x[j] + hh[j]);
        const T z = sigmoid(x[H + j] + hh[H + j]);
        const T hn = hh[2 * H + j];
        const T n = vtanh(x[2 * H + j] + r * hn);
        x[j] = r;
        x[H + j] = z;
        x[2 * H + j] = n;
        extra[j] = hn;
        h[j] = (T(1) - z) * n + z * h[j];
      }
      return;
  }
}

// The backward of cell_forward for one active entry: dh (the gradient to h_t, overwritten by
// the part of the gradient to h_{t-1} that bypasses W_hh), dc (LSTM: gradient to c_t,
// overwritten by the gradient to c_{t-1}), gi/gh the gate gradients.
template <class T>
inline void cell_backward(RNNCell cell, int64_t H, const T* gates, const T* hprev, const T* cprev,
                          const T* extra, T* dh, T* dc, T* gi, T* gh) {
  switch (cell) {
    case RNNCell::ReLU:
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        // the forward's mirror: a NaN gate passes dh on, as cuDNN's CUDNN_RNN_RELU backward does
        // (tests/cudnn/test_BadInput.cpp measured its weight gradients +-Inf, not NaN, there)
        gi[j] = gates[j] <= T(0) ? T(0) : dh[j];
        dh[j] = T(0);
      }
      return;
    case RNNCell::Tanh:
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        gi[j] = dh[j] * (T(1) - gates[j] * gates[j]);
        dh[j] = T(0);
      }
      return;
    case RNNCell::LSTM:
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const T i = gates[j], f = gates[H + j], gg = gates[2 * H + j], o = gates[3 * H + j];
        const T tc = vtanh(extra[j]);
        const T dct = dc[j] + dh[j] * o * (T(1) - tc * tc);
        gi[j] = dct * gg * i * (T(1) - i);
        gi[H + j] = dct * cprev[j] * f * (T(1) - f);
        gi[2 * H + j] = dct * i * (T(1) - gg * gg);
        gi[3 * H + j] = dh[j] * tc * o * (T(1) - o);
        dc[j] = dct * f;
        dh[j] = T(0);
      }
      return;
    case RNNCell::GRU:
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) {
        const T r = gates[j], z = gates[H + j], n = gates[2 * H + j], hn = extra[j];
        const T dn = dh[j] * (T(1) - z) * (T(1) - n * n);
        // dh h_{t-1} - dh n rather than dh (h_{t-1} - n): equal up to rounding for a finite dh, and
        // for an infinite one the NaN cuDNN's GRU backward gives (Inf - Inf where h_{t-1} and n
        // share a sign; tests/cudnn/test_BadInput.cpp, NaN and Inf in gradOutput, measured
        // against both forms on the H200 with cuDNN 9.14)
        const T dz = (dh[j] * hprev[j] - dh[j] * n) * z * (T(1) - z);
        const T dr = dn * hn * r * (T(1) - r);
        gi[j] = gh[j] = dr;
        gi[H + j] = gh[H + j] = dz;
        gi[2 * H + j] = dn;
        gh[2 * H + j] = dn * r;
        dh[j] = dh[j] * z;
      }
      return;
  }
}

}  // namespace

template <class T>
void rnn_layer_forward(const RNNLayerGeometry& g, const T* x, const T* w_ih, const T* w_hh, const T* b_ih,
                       const T* b_hh, const T* h0, const T* c0, T* y, int64_t ldy, T* hn, T* cn,
                       const RNNLayerSaved<T>& saved, T* work) {
  const int64_t S = g.seqLength, B = g.batch, H = g.hidden, G = g.gateSize();
  const bool lstm = g.cell == RNNCell::LSTM;
  copy_or_zero(hn, h0, B * H);
  if (lstm) copy_or_zero(cn, c0, B * H);
  if (S == 0 || B == 0) return;
  // the input projection of every step at once, b_ih broadcast as the GEMM's C
  T* xg = saved.gates;
  for (int64_t r = 0; r < S * B; ++r) std::memcpy(xg + r * G, b_ih, static_cast<size_t>(G) * sizeof(T));
  gemm<T>(false, true, S * B, G, g.inputSize, T(1), x, g.inputSize, w_ih, g.inputSize, T(1), xg, G);
  for (int64_t step = 0; step < S; ++step) {
    const int64_t t = g.reverse ? S - 1 - step : step;
    T* hp = saved.hprev + t * B * H;
    std::memcpy(hp, hn, static_cast<size_t>(B * H) * sizeof(T));
    if (lstm) std::memcpy(saved.cprev + t * B * H, cn, static_cast<size_t>(B * H) * sizeof(T));
    for (int64_t b = 0; b < B; ++b) std::memcpy(work + b * G, b_hh, static_cast<size_t>(G) * sizeof(T));
    gemm<T>(false, true, B, G, H, T(1), hp, H, w_hh, H, T(1), work, G);
    for (int64_t b = 0; b < B; ++b) {
      T* yrow = y + (t * B + b) * ldy;
      T* grow = xg + (t * B + b) * G;
      T* erow = saved.extra ? saved.extra + (t * B + b) * H : nullptr;
      if (!active(g, t, b)) {
        std::fill(yrow, yrow + H, T(0));
        std::fill(grow, grow + G, T(0));
        if (erow) std::fill(erow, erow + H, T(0));
        continue;
      }
      cell_forward(g.cell, H, grow, work + b * G, hn + b * H, lstm ? cn + b * H : nullptr, erow);
      std::memcpy(yrow, hn + b * H, static_cast<size_t>(H) * sizeof(T));
    }
  }
}

template <class T>
void rnn_layer_backward(const RNNLayerGeometry& g, const T* w_hh, const RNNLayerSaved<T>& saved, const T* dy,
                        int64_t ldy, const T* dhn, const T* dcn, T* dgates_ih, T* dgates_hh, T* dh0, T* dc0,
                        T* work) {
  const int64_t S = g.seqLength, B = g.batch, H = g.hidden, G = g.gateSize();
  const bool lstm = g.cell == RNNCell::LSTM;
  T* dh = work;
  T* dc = work + B * H;
  copy_or_zero(dh, dhn, B * H);
  if (lstm) copy_or_zero(dc, dcn, B * H);
  for (int64_t step = 0; step < S; ++step) {
    // the reverse of the forward's order
    const int64_t t = g.reverse ? step : S - 1 - step;
    T* gi_t = dgates_ih + t * B * G;
    T* gh_t = dgates_hh + t * B * G;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t row = t * B + b;
      T* gi = gi_t + b * G;
      T* gh = gh_t + b * G;
      if (!active(g, t, b)) {
        std::fill(gi, gi + G, T(0));
        if (gh != gi) std::fill(gh, gh + G, T(0));
        continue;
      }
      T* dhb = dh + b * H;
      const T* dyr = dy + row * ldy;
#pragma omp simd
      for (int64_t j = 0; j < H; ++j) dhb[j] += dyr[j];
      cell_backward(g.cell, H, saved.gates + row * G, saved.hprev + row * H,
                    lstm ? saved.cprev + row * H : nullptr, saved.extra ? saved.extra + row * H : nullptr,
                    dhb, lstm ? dc + b * H : nullptr, gi, gh);
    }
    // dh_{t-1} += dgates_hh W_hh (skipped entries have zero rows: their dh passes unchanged)
    if (B > 0) gemm<T>(false, false, B, H, G, T(1), gh_t, G, w_hh, H, T(1), dh, H);
  }
  std::memcpy(dh0, dh, static_cast<size_t>(B * H) * sizeof(T));
  if (lstm) std::memcpy(dc0, dc, static_cast<size_t>(B * H) * sizeof(T));
}

#define RNN_INSTANTIATE(T)                                                                                  \
  template void rnn_layer_forward<T>(const RNNLayerGeometry&, const T*, const T*, const T*, const T*,       \
                                     const T*, const T*, const T*, T*, int64_t, T*, T*,                     \
                                     const RNNLayerSaved<T>&, T*);                                          \
  template void rnn_layer_backward<T>(const RNNLayerGeometry&, const T*, const RNNLayerSaved<T>&, const T*, \
                                      int64_t, const T*, const T*, T*, T*, T*, T*, T*);
RNN_INSTANTIATE(float)
RNN_INSTANTIATE(double)
#undef RNN_INSTANTIATE

}  // namespace nn::kernels
