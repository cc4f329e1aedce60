// SoftMax.cpp: rows (inner = 1) are processed one per task with loops over the contiguous
// channels; otherwise work is split into (outer index, block of up to kBlock inner
// positions), looping over channels outside and contiguous inner positions inside, so
// memory is read in order in both cases.
#include "nn/kernels/SoftMax.h"

#include <algorithm>
#include <cmath>

#include "nn/kernels/VecMath.h"

namespace nn::kernels {

namespace {

constexpr int64_t kBlock = 64;

// Calls f(x offset, block length) for every (outer, inner block), in parallel when the
// whole array is large enough to pay for the threads.
template <class F>
void for_blocks(int64_t outer, int64_t channels, int64_t inner, F&& f) {
  const int64_t nblocks = (inner + kBlock - 1) / kBlock;
  const int64_t tasks = outer * nblocks;
  const bool big = outer * channels * inner > 32768;
#pragma omp parallel for schedule(static) if (big && tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t o = t / nblocks, i0 = (t % nblocks) * kBlock;
    f(o * channels * inner + i0, std::min(kBlock, inner - i0));
  }
}

// Calls f(row offset) for every row of a [outer x channels] array.
template <class F>
void for_rows(int64_t outer, int64_t channels, F&& f) {
  const bool big = outer * channels > 32768;
#pragma omp parallel for schedule(static) if (big && outer > 1)
  for (int64_t o = 0; o < outer; ++o) f(o * channels);
}

}  // namespace

template <class T>
void softmax_forward(const T* x, T* y, int64_t outer, int64_t channels, int64_t inner, bool log) {
  if (outer * channels * inner == 0) return;
  if (inner == 1) {
    for_rows(outer, channels, [&](int64_t off) {
      const T* xp = x + off;
      T* yp = y + off;
      T m = xp[0];
#pragma omp simd reduction(max : m)
      for (int64_t c = 1; c < channels; ++c) m = xp[c] > m ? xp[c] : m;
      T s = 0;
      if (log) {
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < channels; ++c) s += vexp(xp[c] - m);
        // (x - m) - log s, not x - (m + log s): exact where x is close to m, however large m is
        const T ls = std::log(s);
#pragma omp simd
        for (int64_t c = 0; c < channels; ++c) yp[c] = (xp[c] - m) - ls;
      } else {
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < channels; ++c) {
          yp[c] = vexp(xp[c] - m);
          s += yp[c];
        }
        const T inv = T(1) / s;
#pragma omp simd
        for (int64_t c = 0; c < channels; ++c) yp[c] *= inv;
      }
    });
    return;
  }
  for_blocks(outer, channels, inner, [&](int64_t off, int64_t len) {
    const T* xp = x + off;
    T* yp = y + off;
    T m[kBlock], s[kBlock];
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) m[j] = xp[j];
    for (int64_t c = 1; c < channels; ++c)
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) m[j] = xp[c * inner + j] > m[j] ? xp[c * inner + j] : m[j];
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) s[j] = T(0);
    if (log) {
      for (int64_t c = 0; c < channels; ++c)
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) s[j] += vexp(xp[c * inner + j] - m[j]);
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) s[j] = std::log(s[j]);
      for (int64_t c = 0; c < channels; ++c)
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) yp[c * inner + j] = (xp[c * inner + j] - m[j]) - s[j];
    } else {
      for (int64_t c = 0; c < channels; ++c)
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) {
          const T e = vexp(xp[c * inner + j] - m[j]);
          yp[c * inner + j] = e;
          s[j] += e;
        }
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) s[j] = T(1) / s[j];
      for (int64_t c = 0; c < channels; ++c)
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) yp[c * inner + j] *= s[j];
    }
  });
}

template <class T>
void softmax_backward(const T* y, const T* dy, T* dx, int64_t outer, int64_t channels, int64_t inner,
                      bool log) {
  if (outer * channels * inner == 0) return;
  if (inner == 1) {
    for_rows(outer, channels, [&](int64_t off) {
      const T* yp = y + off;
      const T* gp = dy + off;
      T* dp = dx + off;
      T s = 0;
      if (log) {
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < channels; ++c) s += gp[c];
#pragma omp simd
        for (int64_t c = 0; c < channels; ++c) dp[c] = gp[c] - vexp(yp[c]) * s;
      } else {
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < channels; ++c) s += gp[c] * yp[c];
#pragma omp simd
        for (int64_t c = 0; c < channels; ++c) dp[c] = yp[c] * (gp[c] - s);
      }
    });
    return;
  }
  for_blocks(outer, channels, inner, [&](int64_t off, int64_t len) {
    const T* yp = y + off;
    const T* gp = dy + off;
    T* dp = dx + off;
    T s[kBlock];
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) s[j] = T(0);
    if (log) {
      for (int64_t c = 0; c < channels; ++c)
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) s[j] += gp[c * inner + j];
      for (int64_t c = 0; c < channels; ++c)
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) {
          const int64_t k = c * inner + j;
          dp[k] = gp[k] - vexp(yp[k]) * s[j];
        }
    } else {
      for (int64_t c = 0; c < channels; ++c)
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) s[j] += gp[c * inner + j] * yp[c * inner + j];
      for (int64_t c = 0; c < channels; ++c)
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) {
          const int64_t k = c * inner + j;
          dp[k] = yp[k] * (gp[k] - s[j]);
        }
    }
  });
}

template void softmax_forward<float>(const float*, float*, int64_t, int64_t, int64_t, bool);
template void softmax_forward<double>(const double*, double*, int64_t, int64_t, int64_t, bool);
template void softmax_backward<float>(const float*, const float*, float*, int64_t, int64_t, int64_t, bool);
template void softmax_backward<double>(const double*, const double*, double*, int64_t, int64_t, int64_t,
                                       bool);

}  // namespace nn::kernels
