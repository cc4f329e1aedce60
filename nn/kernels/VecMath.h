// VecMath.h: exp and tanh written so that the compiler can vectorise loops calling them
// (inline, no calls, branches as selects), for the float32 paths of the activation and
// softmax kernels, where scalar std::exp/std::tanh calls dominated. float: x = n ln2 + r,
// a degree-6 polynomial for exp(r) (Cephes' expf coefficients) and 2^n assembled in the
// exponent bits; relative error a few 1e-7, 0 below -103.97, +inf above 88.72, NaN kept.
// The double overloads call the standard library (the precision gradient checks rely on).
// GCC if-converts the selects only with -fno-trapping-math (set for nn/ in nn/meson.build).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace nn::kernels {

inline double vexp(double x) { return std::exp(x); }
inline double vtanh(double x) { return std::tanh(x); }

inline float vexp(float x) {
  constexpr float lo = -103.972084f, hi = 88.7228394f;
  float xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  xc = xc == xc ? xc : 0.0f;  // NaN: keep the integer conversion below defined
  // n = round(xc / ln 2) by adding and removing 1.5 * 2^23 (no rounding instruction needed)
  constexpr float shifter = 12582912.0f;
  const float n = (xc * 1.44269504088896341f + shifter) - shifter;
  // r = xc - n ln 2, with ln 2 split in two so that r keeps full precision
  const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n as two normal factors, so n from -150 (denormal results) to 128 (overflow) works
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t h = ni / 2;
  const float s1 = std::bit_cast<float>((h + 127) << 23);
  const float s2 = std::bit_cast<float>((ni - h + 127) << 23);
  float y = p * s1 * s2;
  y = x < lo ? 0.0f : y;
  y = x > hi ? std::numeric_limits<float>::infinity() : y;
  return x == x ? y : x;
}

inline float vtanh(float x) {
  const float ax = x < 0 ? -x : x;
  // |x| < 0.625: odd polynomial (Cephes' tanhf); beyond: 1 - 2 / (exp(2|x|) + 1)
  const float s = x * x;
  const float small =
      ((((-5.70498872745e-3f * s + 2.06390887954e-2f) * s - 5.37397155531e-2f) * s + 1.33314422036e-1f) * s -
       3.33332819422e-1f) * s * x + x;
  const float big = 1.0f - 2.0f / (vexp(2.0f * ax) + 1.0f);
  return ax < 0.625f ? small : (x < 0 ? -big : big);
}

}  // namespace nn::kernels
