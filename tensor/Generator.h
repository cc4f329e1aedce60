// Generator.h: the seeded random-number source of the whole library.
// Note [Counter-based randomness]: numbers come from Philox4x32-10 keyed by the seed and
// indexed by (offset + element index), so filling a tensor gives the same values on the CPU
// and on any GPU, independent of thread count, and a run is reproducible from its seed.
#pragma once

#include <cstdint>

#include "tensor/Half.h"

namespace tensor {

struct Philox {
  // Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
  struct Out {
    uint32_t x[4];
  };
  static TENSOR_HD Out draw(uint64_t key, uint64_t counter) {
    uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
    uint32_t c2 = 0, c3 = 0;
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
      const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(p1);
      c3 = static_cast<uint32_t>(p0);
      c0 = n0;
      c2 = n2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    return Out{{c0, c1, c2, c3}};
  }
  // Uniform in [0, 1) with 53 random bits.
  static TENSOR_HD double uniform(uint64_t key, uint64_t counter) {
    const Out o = draw(key, counter);
    const uint64_t bits = (static_cast<uint64_t>(o.x[0]) << 21) ^ (o.x[1] >> 11);
    return static_cast<double>(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
  }
  // Two uniforms in (0, 1] and [0, 1): what Box-Muller needs.
  static TENSOR_HD void uniform_pair(uint64_t key, uint64_t counter, double& u1, double& u2) {
    const Out o = draw(key, counter);
    const uint64_t a = (static_cast<uint64_t>(o.x[0]) << 21) ^ (o.x[1] >> 11);
    const uint64_t b = (static_cast<uint64_t>(o.x[2]) << 21) ^ (o.x[3] >> 11);
    u1 = (static_cast<double>(a & ((1ull << 53) - 1)) + 1.0) * (1.0 / 9007199254740992.0);
    u2 = static_cast<double>(b & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
  }
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 0x5eed) : seed_(seed) {}
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  // Reserves n counters and returns the first: a tensor fill of n elements uses these.
  uint64_t reserve(uint64_t n) {
    const uint64_t first = offset_;
    offset_ += n;
    return first;
  }
  double uniform() { return Philox::uniform(seed_, reserve(1)); }  // [0, 1)
  double normal();                                                   // N(0, 1)
  int64_t randint(int64_t n);                                        // [0, n)

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
void manual_seed(uint64_t seed);  // reseeds the default generator

}  // namespace tensor
