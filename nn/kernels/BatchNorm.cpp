// BatchNorm.cpp: threads take blocks of channels; within a block the loops run over the
// batch outside and (channel, spatial) inside, so [N x C] rows and [N x C x S] planes are
// both read in memory order.
#include "nn/kernels/BatchNorm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "nn/kernels/Parallel.h"

namespace nn::kernels {

namespace {

constexpr int64_t kMaxBlock = 64;

// Calls f(c0, c1) for blocks of channels: whole planes when they are large, up to
// kMaxBlock channels of small planes (so that [N x C] rows stay contiguous). In parallel the
// block count is rounded up to a multiple of the threads, so that each gets as many channels
// (32 channels of 28x28 made 7 blocks of 5, 4 on one of 2 threads; now 8 of 4). Per-channel
// sums do not depend on the blocks, so the results are the same.
template <class F>
void for_channel_blocks(int64_t N, int64_t C, int64_t S, F&& f) {
  int64_t block = std::clamp<int64_t>(4096 / std::max<int64_t>(S, 1), 1, kMaxBlock);
  int64_t nblocks = (C + block - 1) / block;
  const bool big = N * C * S > 32768;
  const int64_t threads = std::min<int64_t>(max_threads(), C);
  if (big && threads > 1 && nblocks % threads != 0) {
    nblocks = std::min(C, (nblocks + threads - 1) / threads * threads);
    block = (C + nblocks - 1) / nblocks;
    nblocks = (C + block - 1) / block;
  }
#pragma omp parallel for schedule(static) if (big && nblocks > 1)
  for (int64_t b = 0; b < nblocks; ++b) f(b * block, std::min(C, (b + 1) * block));
}

// mean and invstd of channels [c0, c1) from their means m and sums of squared deviations sq
// (indexed from c0), and the running statistics' update.
template <class T>
void finish_statistics(int64_t c0, int64_t c1, double n, double eps, const double* m, const double* sq, T* mean,
                       T* invstd, double momentum, T* running_mean, T* running_var) {
  for (int64_t c = c0; c < c1; ++c) {
    const double var = sq[c - c0] / n;
    mean[c] = static_cast<T>(m[c - c0]);
    invstd[c] = static_cast<T>(1.0 / std::sqrt(var + eps));
    if (running_mean) {
      running_mean[c] = static_cast<T>((1 - momentum) * running_mean[c] + momentum * m[c - c0]);
      running_var[c] = static_cast<T>((1 - momentum) * running_var[c] + momentum * sq[c - c0] / (n - 1));
    }
  }
}

}  // namespace

// Note [One-pass float statistics]
// The data is read once: sums of d = x - K and d^2 in double, with K the channel's first
// value, so var = (sum d^2 - (sum d)^2 / n) / n cancels only as much as (mean - K)^2 / var, which
// for a K drawn from the data itself stays small (double has 29 bits beyond float's). Batch norm is
// memory-bound, and this drops one of its three passes over the input. float64 data keeps the
// exact two-pass form below (gradient checks compare it with closed forms), and so does a block
// of channels with NaN or Inf anywhere, so that mean and variance come out as before.
template <class T>
void batchnorm_statistics(const T* x, int64_t N, int64_t C, int64_t S, double eps, T* mean, T* invstd,
                          double momentum, T* running_mean, T* running_var) {
  const double n = static_cast<double>(N * S);
  for_channel_blocks(N, C, S, [&](int64_t c0, int64_t c1) {
    double sum[kMaxBlock] = {}, sq[kMaxBlock] = {}, m[kMaxBlock];
    if (std::is_same_v<T, float> && N > 0 && S > 0) {  // Note [One-pass float statistics]
      double shift[kMaxBlock];
      for (int64_t c = c0; c < c1; ++c) shift[c - c0] = static_cast<double>(x[c * S]);
      for (int64_t i = 0; i < N; ++i)
        for (int64_t c = c0; c < c1; ++c) {
          const T* p = x + (i * C + c) * S;
          const double k = shift[c - c0];
          double as = 0, aq = 0;
#pragma omp simd reduction(+ : as, aq)
          for (int64_t s = 0; s < S; ++s) {
            const double d = static_cast<double>(p[s]) - k;
            as += d;
            aq += d * d;
          }
          sum[c - c0] += as;
          sq[c - c0] += aq;
        }
      bool finite = true;
      for (int64_t c = c0; c < c1; ++c) finite = finite && std::isfinite(sum[c - c0]) && std::isfinite(sq[c - c0]);
      if (finite) {
        for (int64_t c = c0; c < c1; ++c) {
          const double ds = sum[c - c0];
          m[c - c0] = shift[c - c0] + ds / n;
          sq[c - c0] = std::max(0.0, sq[c - c0] - ds * ds / n);  // sum of squared deviations
        }
        finish_statistics(c0, c1, n, eps, m, sq, mean, invstd, momentum, running_mean, running_var);
        return;
      }
      std::fill(sum, sum + kMaxBlock, 0.0);  // NaN or Inf: the two passes, whose non-finite results
      std::fill(sq, sq + kMaxBlock, 0.0);    // match cuDNN's (Note [NaN and Inf] in kernels/Activation.h)
    }
    for (int64_t i = 0; i < N; ++i)
      for (int64_t c = c0; c < c1; ++c) {
        const T* p = x + (i * C + c) * S;
        double acc = 0;
#pragma omp simd reduction(+ : acc)
        for (int64_t s = 0; s < S; ++s) acc += p[s];
        sum[c - c0] += acc;
      }
    for (int64_t c = c0; c < c1; ++c) m[c - c0] = sum[c - c0] / n;
    // second pass over centred values: no cancellation for large means
    for (int64_t i = 0; i < N; ++i)
      for (int64_t c = c0; c < c1; ++c) {
        const T* p = x + (i * C + c) * S;
        const double mc = m[c - c0];
        double acc = 0;
#pragma omp simd reduction(+ : acc)
        for (int64_t s = 0; s < S; ++s) acc += (p[s] - mc) * (p[s] - mc);
        sq[c - c0] += acc;
      }
    finish_statistics(c0, c1, n, eps, m, sq, mean, invstd, momentum, running_mean, running_var);
  });
}

template <class T>
void batchnorm_forward(const T* x, T* y, int64_t N, int64_t C, int64_t S, const T* mean, const T* invstd,
                       const T* weight, const T* bias) {
  for_channel_blocks(N, C, S, [&](int64_t c0, int64_t c1) {
    for (int64_t i = 0; i < N; ++i)
      for (int64_t c = c0; c < c1; ++c) {
        // y = x * a + b with a = invstd * w, b = bias - mean * a
        const T a = invstd[c] * (weight ? weight[c] : T(1));
        const T b = (bias ? bias[c] : T(0)) - mean[c] * a;
        const T* p = x + (i * C + c) * S;
        T* q = y + (i * C + c) * S;
#pragma omp simd
        for (int64_t s = 0; s < S; ++s) q[s] = p[s] * a + b;
      }
  });
}

template <class T>
void batchnorm_backward(const T* x, const T* dy, T* dx, int64_t N, int64_t C, int64_t S, const T* mean,
                        const T* invstd, const T* weight, bool train, T* gradWeight, T* gradBias, double scale) {
  const double n = static_cast<double>(N * S);
  const bool need_sums = gradWeight || gradBias || (dx && train);
  for_channel_blocks(N, C, S, [&](int64_t c0, int64_t c1) {
    double sum[kMaxBlock] = {}, dot[kMaxBlock] = {};  // sum(dy), sum(dy * (x - mean))
    if (need_sums) {
      for (int64_t i = 0; i < N; ++i)
        for (int64_t c = c0; c < c1; ++c) {
          const T* p = x + (i * C + c) * S;
          const T* g = dy + (i * C + c) * S;
          const T mc = mean[c];
          double as = 0, ad = 0;
#pragma omp simd reduction(+ : as, ad)
          for (int64_t s = 0; s < S; ++s) {
            as += g[s];
            ad += g[s] * (p[s] - mc);
          }
          sum[c - c0] += as;
          dot[c - c0] += ad;
        }
    }
    for (int64_t c = c0; c < c1; ++c) {
      if (gradWeight) gradWeight[c] += static_cast<T>(scale * dot[c - c0] * invstd[c]);
      if (gradBias) gradBias[c] += static_cast<T>(scale * sum[c - c0]);
    }
    if (!dx) return;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t c = c0; c < c1; ++c) {
        const T k = invstd[c] * (weight ? weight[c] : T(1));
        const T* g = dy + (i * C + c) * S;
        T* d = dx + (i * C + c) * S;
        if (!train) {
#pragma omp simd
          for (int64_t s = 0; s < S; ++s) d[s] = g[s] * k;
          continue;
        }
        // dx = k * (dy - mean(dy) - (x - mean) * invstd^2 * mean(dy * (x - mean)))
        const T* p = x + (i * C + c) * S;
        const T mc = mean[c];
        const T gm = static_cast<T>(sum[c - c0] / n);
        const T proj = static_cast<T>(dot[c - c0] / n) * invstd[c] * invstd[c];
#pragma omp simd
        for (int64_t s = 0; s < S; ++s) d[s] = (g[s] - gm - (p[s] - mc) * proj) * k;
      }
  });
}

template void batchnorm_statistics<float>(const float*, int64_t, int64_t, int64_t, double, float*, float*, double,
                                          float*, float*);
template void batchnorm_statistics<double>(const double*, int64_t, int64_t, int64_t, double, double*, double*,
                                           double, double*, double*);
template void batchnorm_forward<float>(const float*, float*, int64_t, int64_t, int64_t, const float*, const float*,
                                       const float*, const float*);
template void batchnorm_forward<double>(const double*, double*, int64_t, int64_t, int64_t, const double*,
                                        const double*, const double*, const double*);
template void batchnorm_backward<float>(const float*, const float*, float*, int64_t, int64_t, int64_t, const float*,
                                        const float*, const float*, bool, float*, float*, double);
template void batchnorm_backward<double>(const double*, const double*, double*, int64_t, int64_t, int64_t,
                                         const double*, const double*, const double*, bool, double*, double*,
                                         double);

}  // namespace nn::kernels
