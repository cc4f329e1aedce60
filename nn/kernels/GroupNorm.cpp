// GroupNorm.cpp: see GroupNorm.h.
#include "nn/kernels/GroupNorm.h"

#include <cmath>

namespace nn::kernels {

namespace {
// OpenMP only where the work pays for the threads
constexpr int64_t kParallelElements = 32768;
}  // namespace

template <class T>
void group_norm_statistics(const T* x, const GroupShape& s, double eps, T* mean, T* rstd, T* var) {
  const int64_t rows = s.N * s.G, cols = s.C / s.G * s.S;
  const T e = static_cast<T>(eps);
#pragma omp parallel for schedule(static) if (rows * cols > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T m = 0;
    for (int64_t j = 0; j < cols; ++j) m += xr[j];
    m /= static_cast<T>(cols);
    T v = 0;
    for (int64_t j = 0; j < cols; ++j) v += (xr[j] - m) * (xr[j] - m);
    v /= static_cast<T>(cols);
    mean[r] = m;
    rstd[r] = T(1) / std::sqrt(v + e);
    if (var) var[r] = v;
  }
}

template <class T>
void group_norm_apply(const T* x, const GroupShape& s, const T* mean, const T* rstd, const T* weight, const T* bias,
                      T* y) {
  const int64_t Cg = s.C / s.G, rows = s.N * s.G, cols = Cg * s.S;
#pragma omp parallel for schedule(static) if (rows * cols > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T m = mean[r], rs = rstd[r];
    for (int64_t k = 0; k < Cg; ++k) {
      const int64_t c = (r % s.G) * Cg + k;
      const T* xc = x + r * cols + k * s.S;
      T* yc = y + r * cols + k * s.S;
      if (weight) {
        const T w = weight[c], b = bias[c];
        for (int64_t i = 0; i < s.S; ++i) yc[i] = (xc[i] - m) * rs * w + b;
      } else {
        for (int64_t i = 0; i < s.S; ++i) yc[i] = (xc[i] - m) * rs;
      }
    }
  }
}

template <class T>
void group_norm_backward_input(const T* x, const T* dy, const GroupShape& s, const T* mean, const T* rstd,
                               const T* weight, bool fixedStatistics, T* dx) {
  const int64_t Cg = s.C / s.G, rows = s.N * s.G, cols = Cg * s.S;
  const T n = static_cast<T>(cols);
#pragma omp parallel for schedule(static) if (rows * cols > kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T m = mean[r], rs = rstd[r];
    T sg = 0, sgx = 0;
    if (!fixedStatistics) {
      for (int64_t k = 0; k < Cg; ++k) {
        const T w = weight ? weight[(r % s.G) * Cg + k] : T(1);
        const T* xc = x + r * cols + k * s.S;
        const T* gc = dy + r * cols + k * s.S;
        for (int64_t i = 0; i < s.S; ++i) {
          const T g = gc[i] * w;
          sg += g;
          sgx += g * (xc[i] - m) * rs;
        }
      }
    }
    for (int64_t k = 0; k < Cg; ++k) {
      const T w = weight ? weight[(r % s.G) * Cg + k] : T(1);
      const T* xc = x + r * cols + k * s.S;
      const T* gc = dy + r * cols + k * s.S;
      T* dc = dx + r * cols + k * s.S;
      if (fixedStatistics) {
        for (int64_t i = 0; i < s.S; ++i) dc[i] = rs * (gc[i] * w);
      } else {
        for (int64_t i = 0; i < s.S; ++i) {
          const T xhat = (xc[i] - m) * rs;
          dc[i] = rs * (gc[i] * w - sg / n - xhat * sgx / n);
        }
      }
    }
  }
}

template <class T>
void group_norm_backward_params(const T* x, const T* dy, const GroupShape& s, const T* mean, const T* rstd, T scale,
                                T* gradWeight, T* gradBias) {
  const int64_t Cg = s.C / s.G;
  // channels in parallel, samples in order: the same sums from run to run
#pragma omp parallel for schedule(static) if (s.N * s.C * s.S > kParallelElements)
  for (int64_t c = 0; c < s.C; ++c) {
    T sw = 0, sb = 0;
    for (int64_t n = 0; n < s.N; ++n) {
      const int64_t r = n * s.G + c / Cg;
      const T m = mean[r], rs = rstd[r];
      const T* xc = x + (n * s.C + c) * s.S;
      const T* gc = dy + (n * s.C + c) * s.S;
      for (int64_t i = 0; i < s.S; ++i) {
        sw += gc[i] * (xc[i] - m) * rs;
        sb += gc[i];
      }
    }
    gradWeight[c] += scale * sw;
    gradBias[c] += scale * sb;
  }
}

#define NN_GROUP_NORM_INSTANTIATE(T)                                                                              \
  template void group_norm_statistics<T>(const T*, const GroupShape&, double, T*, T*, T*);                        \
  template void group_norm_apply<T>(const T*, const GroupShape&, const T*, const T*, const T*, const T*, T*);     \
  template void group_norm_backward_input<T>(const T*, const T*, const GroupShape&, const T*, const T*, const T*, \
                                             bool, T*);                                                           \
  template void group_norm_backward_params<T>(const T*, const T*, const GroupShape&, const T*, const T*, T, T*, T*);
NN_GROUP_NORM_INSTANTIATE(float)
NN_GROUP_NORM_INSTANTIATE(double)
#undef NN_GROUP_NORM_INSTANTIATE

}  // namespace nn::kernels
