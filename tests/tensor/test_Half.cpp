// test_Half.cpp: float16 and bfloat16 conversions, exhaustively where the space is small,
// against GCC's _Float16 (correctly rounded) and a bfloat16 rounding reference.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "tensor/Tensor.h"

using namespace tensor;

namespace {
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// bfloat16 reference: the nearest of the two candidates, ties to even, via double arithmetic.
uint16_t bf16_reference(float f) {
  if (std::isnan(f)) return 0x7fc0;
  const uint32_t u = bits(f);
  const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  // Past the largest finite value the next candidate is 2^128 (IEEE rounds to inf there).
  auto value = [](uint32_t b) {
    return (b & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), from_bits(b))
                                            : static_cast<double>(from_bits(b));
  };
  const double dlo = std::abs(value(lo) - f);
  const double dhi = std::abs(value(hi) - f);
  if (dlo < dhi) return static_cast<uint16_t>(lo >> 16);
  if (dhi < dlo) return static_cast<uint16_t>(hi >> 16);
  return static_cast<uint16_t>(((lo >> 16) & 1) ? hi >> 16 : lo >> 16);
}
}  // namespace

TEST_CASE("every float16 value survives float16 -> float -> float16") {
  for (uint32_t b = 0; b < 65536; ++b) {
    const Half h = Half::from_bits(static_cast<uint16_t>(b));
    const float f = h;
    _Float16 ref;
    const uint16_t b16 = static_cast<uint16_t>(b);
    std::memcpy(&ref, &b16, 2);
    if (std::isnan(f)) {
      CHECK(std::isnan(static_cast<float>(ref)));
      continue;
    }
    REQUIRE(f == static_cast<float>(ref));
    REQUIRE(Half(f).bits == b);
  }
}

TEST_CASE("float -> float16 rounds to nearest even like _Float16") {
  Generator g(99);
  for (int i = 0; i < 200000; ++i) {
    // random bit patterns cover normals, subnormals, overflow and ties
    const uint32_t u = static_cast<uint32_t>(g.uniform() * 4294967296.0);
    const float f = from_bits(u);
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    if (std::isnan(f)) {
      CHECK(std::isnan(static_cast<float>(Half(f))));
      continue;
    }
    REQUIRE_MESSAGE(Half(f).bits == ref_bits, "f=" << f << " bits=" << u);
  }
  // exact ties and the overflow boundary
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e-8f, 2.9802322e-08f, 5.9604645e-08f, -0.0f,
                  1.0009765625f /* 1 + half an ulp: tie to even */, INFINITY}) {
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    CHECK(Half(f).bits == ref_bits);
  }
}

TEST_CASE("float -> bfloat16 rounds to nearest even") {
  Generator g(7);
  for (int i = 0; i < 200000; ++i) {
    const float f = from_bits(static_cast<uint32_t>(g.uniform() * 4294967296.0));
    if (std::isnan(f)) {
      CHECK(std::isnan(static_cast<float>(BFloat16(f))));
      continue;
    }
    REQUIRE(BFloat16(f).bits == bf16_reference(f));
  }
  CHECK(static_cast<float>(BFloat16(1.0f)) == 1.0f);
  CHECK(static_cast<float>(BFloat16(3.4e38f)) == INFINITY);  // rounds past the largest finite
}

TEST_CASE("16-bit tensors compute in float and round once") {
  Tensor a = from_vector<float>({1, 2, 3}).to(DType::Float16);
  Tensor b = from_vector<float>({0.5f, 0.25f, 1024}).to(DType::Float16);
  Tensor s = a.add(b);
  CHECK(s.dtype() == DType::Float16);
  CHECK(s.to_vector<float>() == std::vector<float>{1.5f, 2.25f, 1027});
  Tensor bf = from_vector<float>({1, 256}).to(DType::BFloat16);
  CHECK(bf.add(1).to_vector<float>() == std::vector<float>{2, 256});  // 257 is not a bfloat16
  CHECK(ones({1000}, DType::BFloat16).sum().item() == 1000);          // a bfloat16 running sum would stick at 256
}

// The conversions before they moved to Eigen and CUDA (see Note [16-bit NaNs] in Half.h),
// written out bit by bit as the reference they must keep matching, NaNs included.
namespace reference {
uint16_t half_from_float(float f) {
  const uint32_t x = bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // nan: the quiet nan
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // inf, or rounds to it
  if (absx < 0x38800000u) {                                               // subnormal half or zero
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);           // under half the least subnormal
    const uint32_t exp = absx >> 23;
    const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t s = 126u - exp;  // value = mant * 2^(exp - 150), in units of 2^-24
    uint32_t q = mant >> s;
    const uint32_t rem = mant & ((1u << s) - 1u), halfway = 1u << (s - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t h = (absx - 0x38000000u) >> 13;  // rebias 127 -> 15, keep 10 mantissa bits
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

uint32_t half_to_float_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1fu) return sign | 0x7f800000u | (mant << 13);  // inf, nan with its payload
  if (exp == 0) {
    if (mant == 0) return sign;
    return bits(sign ? -static_cast<float>(mant) * 0x1p-24f : static_cast<float>(mant) * 0x1p-24f);
  }
  return sign | ((exp + 112u) << 23) | (mant << 13);
}

uint16_t bfloat16_from_float(float f) {
  const uint32_t x = bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
}  // namespace reference

TEST_CASE("float16 -> float: all 65536 bit patterns, NaN payloads and signs included") {
  int64_t checked = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    REQUIRE_MESSAGE(bits(Half::from_bits(h)) == reference::half_to_float_bits(h), "float16 bits " << b);
    ++checked;
  }
  CHECK(checked == 65536);
  CHECK(bits(Half::from_bits(0x7c01)) == 0x7f802000u);  // a signalling NaN stays as it is
  CHECK(bits(Half::from_bits(0xfe00)) == 0xffc00000u);
  CHECK(static_cast<float>(Half::from_bits(0x0001)) == 0x1p-24f);
  CHECK(static_cast<float>(Half::from_bits(0x7bff)) == 65504.0f);
}

TEST_CASE("bfloat16 -> float: all 65536 bit patterns are the top half of the float") {
  for (uint32_t b = 0; b < 65536; ++b) {
    const BFloat16 v = BFloat16::from_bits(static_cast<uint16_t>(b));
    REQUIRE_MESSAGE(bits(v) == b << 16, "bfloat16 bits " << b);
    // and back: exact for numbers, the quiet bit set for NaNs
    const bool nan = (b & 0x7fffu) > 0x7f80u;
    REQUIRE(BFloat16(static_cast<float>(v)).bits == (nan ? (b | 0x40u) : b));
  }
}

TEST_CASE("float -> float16 and bfloat16: sampled bit patterns follow the reference rule exactly") {
  Generator g(2024);
  std::vector<uint32_t> samples;
  for (int i = 0; i < 1000000; ++i) samples.push_back(static_cast<uint32_t>(g.uniform() * 4294967296.0));
  // around every rounding boundary: ties, overflow, the subnormal range, NaN payloads
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t u :
         {0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x33000000u, 0x33000001u, 0x337fffffu, 0x33800000u,
          0x387fe000u, 0x387ff000u, 0x38800000u, 0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u, 0x477fe000u,
          0x477fefffu, 0x477ff000u, 0x47800000u, 0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu, 0x7f800000u, 0x7f800001u,
          0x7f802000u, 0x7fa00000u, 0x7fc00000u, 0x7fc12345u, 0x7fffffffu}) {
      // unsigned wrap-around (0x7fffffff + 1 would overflow an int32)
      for (uint32_t d = 0; d <= 4; ++d) samples.push_back(sign | (u + d - 2u));
    }
  }
  for (uint32_t e = 0; e < 256; ++e) {  // every exponent, with tie-like mantissas
    for (uint32_t m : {0x000000u, 0x001000u, 0x003000u, 0x008000u, 0x018000u, 0x7fffffu})
      samples.push_back(e << 23 | m);
  }
  for (const uint32_t u : samples) {
    const float f = from_bits(u);
    REQUIRE_MESSAGE(Half(f).bits == reference::half_from_float(f), "float bits " << u);
    REQUIRE_MESSAGE(BFloat16(f).bits == reference::bfloat16_from_float(f), "float bits " << u);
  }
  CHECK(samples.size() > 1000000);
}
