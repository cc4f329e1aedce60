// test_CpuAllocation.cpp: CPU blocks freed and allocated again, as a training step's activations
// are, reuse the pages they had (Note [Keeping freed CPU blocks] in tensor/Storage.cpp).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <sys/resource.h>

#include "tensor/Tensor.h"

using namespace tensor;

TEST_CASE("CPU storage is 64-byte aligned, for sizes that are not multiples of it too") {
  for (int64_t n : {1, 3, 17, 1000, 100003}) {
    const Tensor t = empty({n});
    CHECK(reinterpret_cast<uintptr_t>(t.data<float>()) % 64 == 0);
  }
}

// glibc's allocator only (ASan's quarantines freed blocks and has its own)
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
namespace {
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}
}  // namespace

TEST_CASE("a step's activations, freed and allocated again, take no fresh pages") {
  // Three 12 MiB blocks alive at once, written, freed: glibc's defaults unmapped or trimmed
  // them, and aligned_alloc left holes too small to reuse, so every round faulted its 9,216
  // pages in again.
  constexpr int64_t kFloats = 3 << 20;
  std::vector<long> faults;
  for (int round = 0; round < 4; ++round) {
    const long before = minor_faults();
    {
      std::vector<Tensor> live;
      for (int i = 0; i < 3; ++i) {
        live.push_back(empty({kFloats}));
        float* p = live.back().data<float>();
        for (int64_t j = 0; j < kFloats; j += 1024) p[j] = static_cast<float>(round + j);
      }
    }
    faults.push_back(minor_faults() - before);
  }
  // (the first round may or may not find free heap left by earlier tests)
  CHECK(faults[2] < 500);
  CHECK(faults[3] < 500);
}
#endif
