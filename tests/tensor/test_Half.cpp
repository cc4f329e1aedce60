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
  CHECK(ones({1000}, DType::BFloat16).sum().item() == 1000);  // a bfloat16 running sum would stick at 256
}
