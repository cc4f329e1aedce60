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
    case Activation::Abs:
    case Activation::Square:
    case Activation::Log:
    case Activation::Power:
      return true;
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
    // the staples: libm's functions, IEEE's non-finite values (Note [Element-wise staples])
    case Activation::Abs:
      return map1(x, y, n, [](T v) { return std::abs(v); });
    case Activation::Square:
      return map1(x, y, n, [](T v) { return v * v; });
    case Activation::Sqrt:
      return map1(x, y, n, [](T v) { return std::sqrt(v); });
    case Activation::Exp:
      return map1(x, y, n, [](T v) { return std::exp(v); });
    case Activation::Log:
      return map1(x, y, n, [](T v) { return std::log(v); });
    case Activation::Power:
      return map1(x, y, n, [c](T v) { return std::pow(v, c); });
    case Activation::MulConstant:
      return map1(x, y, n, [c](T v) { return v * c; });
    case Activation::AddConstant:
      return map1(x, y, n, [c](T v) { return v + c; });
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
    // PyTorch's: dy / (2 y) (y = 0 gives +-Inf) and dy y
    case Activation::Sqrt:
      return map2(y, dy, dx, n, [](T o, T g) { return g / (T(2) * o); });
    case Activation::Exp:
      return map2(y, dy, dx, n, [](T o, T g) { return g * o; });
    case Activation::MulConstant:
      return map2(y, dy, dx, n, [c](T, T g) { return g * c; });
    case Activation::AddConstant:
      return map2(y, dy, dx, n, [](T, T g) { return g; });
    case Activation::GELU:
    case Activation::GELUTanh:
    case Activation::SiLU:
    case Activation::Abs:
    case Activation::Square:
    case Activation::Log:
    case Activation::Power:
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
    // PyTorch's: dy sgn(x) (sgn(NaN) = sgn(0) = 0), dy (2 x), dy / x, and for the power
    // dy (p x^(p-1)), zero everywhere when p = 0 (Note [Element-wise staples])
    case Activation::Abs:
      return map2(x, dy, dx, n, [](T v, T g) { return g * (T(v > T(0)) - T(v < T(0))); });
    case Activation::Square:
      return map2(x, dy, dx, n, [](T v, T g) { return g * (T(2) * v); });
    case Activation::Log:
      return map2(x, dy, dx, n, [](T v, T g) { return g / v; });
    case Activation::Power: {
      if (coef == 0) return map2(x, dy, dx, n, [](T, T) { return T(0); });
      const T cm1 = static_cast<T>(coef - 1);
      return map2(x, dy, dx, n, [c, cm1](T v, T g) { return g * (c * std::pow(v, cm1)); });
    }
    default:
      break;  // the others read the output: activation_backward
  }
}

template <class T>
void prelu_forward(const T* x, const T* w, T* y, int64_t outer, int64_t channels, int64_t inner) {
#pragma omp parallel for if (outer * channels * inner > (int64_t{1} << 15))
  for (int64_t oc = 0; oc < outer * channels; ++oc) {
    const T a = w[oc % channels];
    const T* xr = x + oc * inner;
    T* yr = y + oc * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) yr[i] = xr[i] > T(0) ? xr[i] : a * xr[i];
  }
}

template <class T>
void prelu_backward(const T* x, const T* w, const T* dy, T* dx, int64_t outer, int64_t channels, int64_t inner) {
#pragma omp parallel for if (outer * channels * inner > (int64_t{1} << 15))
  for (int64_t oc = 0; oc < outer * channels; ++oc) {
    const T a = w[oc % channels];
    const T* xr = x + oc * inner;
    const T* gr = dy + oc * inner;
    T* dr = dx + oc * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) dr[i] = xr[i] > T(0) ? gr[i] : a * gr[i];
  }
}

template <class T>
void prelu_acc_grad_weight(const T* x, const T* dy, T* gw, double scale, int64_t outer, int64_t channels,
                           int64_t inner) {
#pragma omp parallel for if (outer * channels * inner > (int64_t{1} << 15))
  for (int64_t c = 0; c < channels; ++c) {
    double acc = 0;
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t base = (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const T v = x[base + i];
        if (!(v > T(0))) acc += static_cast<double>(v) * static_cast<double>(dy[base + i]);
      }
    }
    gw[c] = static_cast<T>(static_cast<double>(gw[c]) + scale * acc);
  }
}

template void prelu_forward<float>(const float*, const float*, float*, int64_t, int64_t, int64_t);
template void prelu_forward<double>(const double*, const double*, double*, int64_t, int64_t, int64_t);
template void prelu_backward<float>(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t);
template void prelu_backward<double>(const double*, const double*, const double*, double*, int64_t, int64_t, int64_t);
template void prelu_acc_grad_weight<float>(const float*, const float*, float*, double, int64_t, int64_t, int64_t);
template void prelu_acc_grad_weight<double>(const double*, const double*, double*, double, int64_t, int64_t, int64_t);

template void activation_forward<float>(Activation, double, const float*, float*, int64_t);
template void activation_forward<double>(Activation, double, const double*, double*, int64_t);
template void activation_backward<float>(Activation, double, const float*, const float*, float*, int64_t);
template void activation_backward<double>(Activation, double, const double*, const double*, double*, int64_t);
template void activation_backward_from_input<float>(Activation, double, const float*, const float*, float*, int64_t);
template void activation_backward_from_input<double>(Activation, double, const double*, const double*, double*,
                                                     int64_t);

}  // namespace nn::kernels
