// Half.h: the two 16-bit floating-point storage types, float16 (IEEE binary16) and
// bfloat16 (the top half of a float32). They are storage types: arithmetic converts to
// float, computes, and rounds back (round to nearest even), on the host and in CUDA
// kernels alike, so a CPU and a GPU result agree bit for bit after rounding.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TENSOR_HD __host__ __device__ __forceinline__
#else
#define TENSOR_HD inline
#endif

namespace tensor {

namespace detail {
TENSOR_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
TENSOR_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
}  // namespace detail

struct Half {
  uint16_t bits = 0;

  Half() = default;
  TENSOR_HD Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a builtin float
  TENSOR_HD operator float() const { return to_float(bits); }

  static TENSOR_HD Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }

  static TENSOR_HD uint16_t from_float(float f) {
    const uint32_t x = detail::float_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) {  // inf or nan: keep nan-ness (quiet it)
      return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    }
    if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (absx < 0x38800000u) {                                                 // subnormal half or zero
      if (absx < 0x33000000u) return static_cast<uint16_t>(sign);             // < half of min subnormal
      // value = mant * 2^(exp-150) and the subnormal unit is 2^-24, so q = mant >> (126 - exp)
      const uint32_t exp = absx >> 23;
      const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
      const uint32_t s = 126u - exp;  // 14..24
      uint32_t q = mant >> s;
      const uint32_t rem = mant & ((1u << s) - 1u);
      const uint32_t halfway = 1u << (s - 1u);
      if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
      return static_cast<uint16_t>(sign | q);
    }
    // normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits to nearest even
    uint32_t h = ((absx - 0x38000000u) >> 13);
    const uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into exponent: still right
    return static_cast<uint16_t>(sign | h);
  }

  static TENSOR_HD float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      if (mant == 0) return detail::bits_float(sign);
      // subnormal: mant * 2^-24
      const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
      return sign ? -v : v;
    }
    return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  TENSOR_HD BFloat16(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a builtin float
  TENSOR_HD operator float() const { return detail::bits_float(static_cast<uint32_t>(bits) << 16); }

  static TENSOR_HD BFloat16 from_bits(uint16_t b) {
    BFloat16 v;
    v.bits = b;
    return v;
  }

  static TENSOR_HD uint16_t from_float(float f) {
    const uint32_t x = detail::float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

}  // namespace tensor
