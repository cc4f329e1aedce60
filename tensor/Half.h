// Half.h: the two 16-bit floating-point storage types, float16 (IEEE binary16) and
// bfloat16 (the top half of a float32). They are storage types: arithmetic converts to
// float, computes, and rounds back (round to nearest even), on the host and in CUDA
// kernels alike, so a CPU and a GPU result agree bit for bit after rounding. The rounding
// is Eigen's (Eigen::half, Eigen::bfloat16) on the host, out of line in Half.cpp so that
// this header needs no Eigen, and CUDA's (cuda_fp16.h, cuda_bf16.h) in device code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
// nvcc only: host translation units (and installed users) never see a CUDA header here.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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

// Eigen's conversions of finite and infinite values (Half.cpp).
uint16_t eigen_half_from_float(float f);
float eigen_half_to_float(uint16_t h);
uint16_t eigen_bfloat16_from_float(float f);
}  // namespace detail

// Note [16-bit NaNs]: the libraries round every number alike (IEEE round to nearest even is
// unique) but make different NaNs: Eigen's bfloat16 drops the payload (0x7fc0), its F16C path
// (where Eigen takes it) quiets a signalling NaN, the GPU's cvt gives a canonical NaN. So NaNs
// are converted here, on both devices by the rule of the hand-written code this replaced:
// float -> float16 gives the quiet NaN 0x7e00 with the sign; float16 -> float and bfloat16 ->
// float keep sign and payload; float -> bfloat16 keeps the top 16 bits and sets the quiet bit
// (0x40).

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
    if (f != f) return static_cast<uint16_t>(((detail::float_bits(f) >> 16) & 0x8000u) | 0x7e00u);
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f));
#else
    return detail::eigen_half_from_float(f);
#endif
  }

  static TENSOR_HD float to_float(uint16_t h) {
    if ((h & 0x7fffu) > 0x7c00u) {
      return detail::bits_float((static_cast<uint32_t>(h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13));
    }
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    return detail::eigen_half_to_float(h);
#endif
  }
};

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  TENSOR_HD BFloat16(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a builtin float
  // exact: a bfloat16 is the top half of the float
  TENSOR_HD operator float() const { return detail::bits_float(static_cast<uint32_t>(bits) << 16); }

  static TENSOR_HD BFloat16 from_bits(uint16_t b) {
    BFloat16 v;
    v.bits = b;
    return v;
  }

  static TENSOR_HD uint16_t from_float(float f) {
    if (f != f) return static_cast<uint16_t>((detail::float_bits(f) >> 16) | 0x40u);
#if defined(__CUDA_ARCH__)
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
    return detail::eigen_bfloat16_from_float(f);
#endif
  }
};

}  // namespace tensor
