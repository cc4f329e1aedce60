// Reduce.cpp: see Reduce.h. One output (or row) per iteration of a parallel loop, each folded
// serially in index order: the result does not depend on the thread count.
#include "nn/kernels/Reduce.h"

#include <cmath>
#include <limits>

namespace nn::kernels {

namespace {
constexpr int64_t kParallelAbove = int64_t{1} << 15;

// The first index of the extremum of x[0], x[s], ..., x[(n-1) s]; a NaN wins (the first one).
template <class T>
int64_t extremum_index(bool max, const T* x, int64_t n, int64_t s) {
  T best = x[0];
  int64_t at = 0;
  for (int64_t k = 1; k < n && !std::isnan(best); ++k) {
    const T v = x[k * s];
    if (std::isnan(v) || (max ? v > best : v < best)) {
      best = v;
      at = k;
    }
  }
  return at;
}

// What the norm reads of one row: norm, and for a finite p normp = sum |x|^p + eps (Torch's);
// for p = inf, norm = max |x| + eps at index `at`.
struct RowNorm {
  double norm, normp;
  int64_t at;
};

template <class T>
RowNorm row_norm(const T* x, int64_t d, double p, double eps) {
  if (std::isinf(p)) {
    double best = d > 0 ? std::abs(static_cast<double>(x[0])) : 0.0;
    int64_t at = 0;
    for (int64_t k = 1; k < d && !std::isnan(best); ++k) {
      const double v = std::abs(static_cast<double>(x[k]));
      if (std::isnan(v) || v > best) {
        best = v;
        at = k;
      }
    }
    return {best + eps, 0.0, at};
  }
  double s = 0;
  for (int64_t k = 0; k < d; ++k) {
    const double v = static_cast<double>(x[k]);
    s += p == 2 ? v * v : (p == 1 ? std::abs(v) : std::pow(std::abs(v), p));
  }
  s += eps;
  return {p == 2 ? std::sqrt(s) : (p == 1 ? s : std::pow(s, 1 / p)), s, 0};
}
}  // namespace

template <class T>
void reduce_sum(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool mean) {
#pragma omp parallel for if (outer * n * inner > kParallelAbove)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t k = 0; k < n; ++k) acc += static_cast<double>(x[(o * n + k) * inner + i]);
      y[o * inner + i] = static_cast<T>(mean ? acc / static_cast<double>(n) : acc);
    }
  }
}

template <class T>
void reduce_sum_backward(const T* dy, T* dx, int64_t outer, int64_t n, int64_t inner, bool mean) {
#pragma omp parallel for if (outer * n * inner > kParallelAbove)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        const T g = dy[o * inner + i];
        dx[(o * n + k) * inner + i] = mean ? g / static_cast<T>(n) : g;
      }
    }
  }
}

template <class T>
void reduce_extremum(bool max, const T* x, T* y, int64_t* index, int64_t outer, int64_t n, int64_t inner) {
#pragma omp parallel for if (outer * n * inner > kParallelAbove)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* p = x + o * n * inner + i;
      const int64_t k = extremum_index(max, p, n, inner);
      y[o * inner + i] = p[k * inner];
      index[o * inner + i] = k;
    }
  }
}

template <class T>
void reduce_extremum_backward(const T* dy, const int64_t* index, T* dx, int64_t outer, int64_t n, int64_t inner) {
#pragma omp parallel for if (outer * n * inner > kParallelAbove)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        dx[(o * n + k) * inner + i] = index[o * inner + i] == k ? dy[o * inner + i] : T(0);
      }
    }
  }
}

template <class T>
void normalize_forward(const T* x, T* y, int64_t rows, int64_t d, double p, double eps) {
#pragma omp parallel for if (rows * d > kParallelAbove)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * d;
    const T norm = static_cast<T>(row_norm(xr, d, p, eps).norm);
    for (int64_t k = 0; k < d; ++k) y[r * d + k] = xr[k] / norm;
  }
}

template <class T>
void normalize_backward(const T* x, const T* dy, T* dx, int64_t rows, int64_t d, double p, double eps) {
  const bool inf = std::isinf(p);
  // Torch's buffer x |x|^(p-2): x itself for p = 2, with eps added to |x| for odd p < 2
  const bool odd = !inf && std::fmod(p, 2.0) != 0;
#pragma omp parallel for if (rows * d > kParallelAbove)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * d;
    const T* gr = dy + r * d;
    T* dr = dx + r * d;
    const RowNorm n = row_norm(xr, d, p, eps);
    double cross = 0;  // sum x dy
    for (int64_t k = 0; k < d; ++k) cross += static_cast<double>(xr[k]) * static_cast<double>(gr[k]);
    if (inf) {
      // (norm dy - [k = at] x_at / norm * cross) / norm^2, Torch's
      const double nn2 = n.norm * n.norm;
      for (int64_t k = 0; k < d; ++k) {
        const double b = k == n.at ? static_cast<double>(xr[k]) / n.norm * cross : 0.0;
        dr[k] = static_cast<T>((n.norm * static_cast<double>(gr[k]) - b) / nn2);
      }
      continue;
    }
    // (normp dy - x |x|^(p-2) cross) / (normp norm)
    const double den = n.normp * n.norm;
    for (int64_t k = 0; k < d; ++k) {
      const double v = static_cast<double>(xr[k]);
      const double b = p == 2 ? v : std::pow(std::abs(v) + (odd && p < 2 ? eps : 0.0), p - 2) * v;
      dr[k] = static_cast<T>((n.normp * static_cast<double>(gr[k]) - b * cross) / den);
    }
  }
}

#define NN_REDUCE_INSTANTIATE(T)                                                                      \
  template void reduce_sum<T>(const T*, T*, int64_t, int64_t, int64_t, bool);                         \
  template void reduce_sum_backward<T>(const T*, T*, int64_t, int64_t, int64_t, bool);                \
  template void reduce_extremum<T>(bool, const T*, T*, int64_t*, int64_t, int64_t, int64_t);          \
  template void reduce_extremum_backward<T>(const T*, const int64_t*, T*, int64_t, int64_t, int64_t); \
  template void normalize_forward<T>(const T*, T*, int64_t, int64_t, double, double);                 \
  template void normalize_backward<T>(const T*, const T*, T*, int64_t, int64_t, double, double);
NN_REDUCE_INSTANTIATE(float)
NN_REDUCE_INSTANTIATE(double)
#undef NN_REDUCE_INSTANTIATE

}  // namespace nn::kernels
