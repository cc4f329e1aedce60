// Activation.cpp: one chunked OpenMP loop, specialised per mode outside the element loop;
// each body is branch-free and call-free (kernels/VecMath.h for float exp/tanh) so that
// `omp simd` vectorises it.
#include "nn/kernels/Activation.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "nn/kernels/VecMath.h"

namespace nn::kernels {

namespace {

// Calls f(begin, end) over [0, n) in chunks large enough to amortise a thread start.
template <class F>
void for_chunks(int64_t n, F&& f) {
  constexpr int64_t kChunk = int64_t{1} << 15;
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (nchunks > 1)
  for (int64_t c = 0; c < nchunks; ++c) f(c * kChunk, std::min(n, (c + 1) * kChunk));
}

template <class T, class Op>
void map1(const T* x, T* y, int64_t n, Op op) {
  for_chunks(n, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] = op(x[i]);
  });
}

template <class T, class Op>
void map2(const T* y, const T* dy, T* dx, int64_t n, Op op) {
  for_chunks(n, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) dx[i] = op(y[i], dy[i]);
  });
}

// GELU's constants: 1/sqrt(2), 1/sqrt(2 pi), sqrt(2/pi) and the tanh form's cubic coefficient.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

}  // namespace

bool activation_needs_input(Activation mode, double coef) {
  switch (mode) {
    case Activation::GELU:
    case Activation::GELUTanh:
    case Activation::SiLU:
      return true;
    case Activation::LeakyReLU:
      return coef < 0;
    default:
      return false;
  }
}

template <class T>
void activation_forward(Activation mode, double coef, const T* x, T* y, int64_t n) {
  const T c = static_cast<T>(coef);
  switch (mode) {
    // See Note [NaN and Inf]: each comparison is false for a NaN, which selects v itself
    case Activation::ReLU:
      return map1(x, y, n, [](T v) { return v <= T(0) ? T(0) : v; });
    case Activation::ClippedReLU:
      return map1(x, y, n, [c](T v) { return v <= T(0) ? T(0) : (v >= c ? c : v); });
    case Activation::Tanh:
      return map1(x, y, n, [](T v) { return vtanh(v); });
    case Activation::Sigmoid:
      return map1(x, y, n, [](T v) { return T(1) / (T(1) + vexp(-v)); });
    case Activation::ELU:
      // float: exp(v) - 1 (absolute error ~1e-7 near 0); double: expm1
      if constexpr (std::is_same_v<T, double>) {
        return map1(x, y, n, [c](T v) { return v > T(0) ? v : c * std::expm1(v); });
      } else {
        return map1(x, y, n, [c](T v) { return v > T(0) ? v : c * (vexp(v) - T(1)); });
      }
    // the next three are PyTorch's formulas, so that infinities give what PyTorch's do
    case Activation::GELU:
      return map1(x, y, n, [](T v) { return v * T(0.5) * (T(1) + std::erf(v * T(kSqrtHalf))); });
    case Activation::GELUTanh:
      return map1(x, y, n, [](T v) {
        const T inner = T(kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v);
        return T(0.5) * v * (T(1) + std::tanh(inner));
      });
    case Activation::SiLU:
      return map1(x, y, n, [](T v) { return v / (T(1) + std::exp(-v)); });
    case Activation::LeakyReLU:
      // NaN > 0 is false: NaN * slope stays NaN
      return map1(x, y, n, [c](T v) { return v > T(0) ? v : v * c; });
  }
}

template <class T>
void activation_backward(Activation mode, double coef, const T* y, const T* dy, T* dx, int64_t n) {
  const T c = static_cast<T>(coef);
  switch (mode) {
    // a NaN output is not > 0: its gradient is 0, as cuDNN's (Note [NaN and Inf])
    case Activation::ReLU:
      return map2(y, dy, dx, n, [](T o, T g) { return o > T(0) ? g : T(0); });
    case Activation::ClippedReLU:
      return map2(y, dy, dx, n, [c](T o, T g) { return o > T(0) && o < c ? g : T(0); });
    case Activation::Tanh:
      return map2(y, dy, dx, n, [](T o, T g) { return g * (T(1) - o * o); });
    case Activation::Sigmoid:
      return map2(y, dy, dx, n, [](T o, T g) { return g * o * (T(1) - o); });
    case Activation::ELU:
      // y <= 0 came from alpha*(exp(x)-1), whose derivative alpha*exp(x) is y + alpha
      return map2(y, dy, dx, n, [c](T o, T g) { return o > T(0) ? g : g * (o + c); });
    case Activation::LeakyReLU:
      // with a slope >= 0, y > 0 exactly where x > 0
      return map2(y, dy, dx, n, [c](T o, T g) { return o > T(0) ? g : g * c; });
    case Activation::GELU:
    case Activation::GELUTanh:
    case Activation::SiLU:
      break;  // need the input: activation_backward_from_input
  }
}

template <class T>
void activation_backward_from_input(Activation mode, double coef, const T* x, const T* dy, T* dx, int64_t n) {
  const T c = static_cast<T>(coef);
  switch (mode) {
    case Activation::GELU:
      // d/dx x Phi(x) = Phi(x) + x phi(x)
      return map2(x, dy, dx, n, [](T v, T g) {
        const T cdf = T(0.5) * (T(1) + std::erf(v * T(kSqrtHalf)));
        const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v);
        return g * (cdf + v * pdf);
      });
    case Activation::GELUTanh:
      return map2(x, dy, dx, n, [](T v, T g) {
        const T t = std::tanh(T(kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v));
        const T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * v * v);
        return g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dinner);
      });
    case Activation::SiLU:
      // s (1 + x (1 - s)), s = sigmoid(x)
      return map2(x, dy, dx, n, [](T v, T g) {
        const T s = T(1) / (T(1) + std::exp(-v));
        return g * s * (T(1) + v * (T(1) - s));
      });
    case Activation::LeakyReLU:
      return map2(x, dy, dx, n, [c](T v, T g) { return v > T(0) ? g : g * c; });
    default:
      break;  // the others read the output: activation_backward
  }
}

template void activation_forward<float>(Activation, double, const float*, float*, int64_t);
template void activation_forward<double>(Activation, double, const double*, double*, int64_t);
template void activation_backward<float>(Activation, double, const float*, const float*, float*, int64_t);
template void activation_backward<double>(Activation, double, const double*, const double*, double*, int64_t);
template void activation_backward_from_input<float>(Activation, double, const float*, const float*, float*, int64_t);
template void activation_backward_from_input<double>(Activation, double, const double*, const double*, double*,
                                                     int64_t);

}  // namespace nn::kernels
