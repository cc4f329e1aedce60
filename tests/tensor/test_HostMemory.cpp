// test_HostMemory.cpp: the CPU allocator's counts (tensor/HostMemory.h): every CPU storage
// counted as allocated (whole 64-byte lines) and as freed, views and copies into existing
// storage not at all, the peak per phase, and the counts exact under threads.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "tensor/HostMemory.h"
#include "tensor/Tensor.h"

using namespace tensor;

TEST_CASE("host_memory_stats: a CPU storage counts its 64-byte lines while it lives") {
  const HostMemoryStats before = host_memory_stats();
  {
    const Tensor t = empty({17});  // 68 bytes: two lines
    HostMemoryStats now = host_memory_stats();
    CHECK(now.allocated_bytes - before.allocated_bytes == 128);
    CHECK(now.allocations - before.allocations == 1);
    CHECK(now.frees == before.frees);
    // views share the storage, and a copy between two of them that do not overlap allocates
    // nothing (Note [Copies between overlapping views] in tensor/Tensor.cpp)
    const Tensor v = t.narrow(0, 0, 8).view({2, 4});
    Tensor w = t.narrow(0, 9, 8);
    w.copy_(v.reshape({8}));
    now = host_memory_stats();
    CHECK(now.allocated_bytes - before.allocated_bytes == 128);
    CHECK(now.allocations - before.allocations == 1);
    const Tensor e = empty({0});  // an empty storage: one line
    CHECK(host_memory_stats().allocated_bytes - before.allocated_bytes == 128 + 64);
    const Tensor d = zeros({16}, DType::Float64);  // 128 bytes exactly
    CHECK(host_memory_stats().allocated_bytes - before.allocated_bytes == 128 + 64 + 128);
  }
  const HostMemoryStats after = host_memory_stats();
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.allocations - before.allocations == 3);
  CHECK(after.frees - before.frees == 3);
}

TEST_CASE("host_memory_stats: the peak since a reset, per phase") {
  reset_peak_host_memory_stats();
  const HostMemoryStats start = host_memory_stats();
  CHECK(start.peak_allocated_bytes == start.allocated_bytes);
  { const Tensor big = empty({1 << 18}); }  // 1 MiB, gone again
  const HostMemoryStats after = host_memory_stats();
  CHECK(after.allocated_bytes == start.allocated_bytes);
  CHECK(after.peak_allocated_bytes == start.allocated_bytes + (4u << 18));
  reset_peak_host_memory_stats();
  CHECK(host_memory_stats().peak_allocated_bytes == start.allocated_bytes);
  { const Tensor small = empty({16}); }
  CHECK(host_memory_stats().peak_allocated_bytes == start.allocated_bytes + 64);
}

TEST_CASE("host_memory_stats: exact under threads allocating and freeing at once") {
  constexpr int kThreads = 4, kEach = 2000;
  reset_peak_host_memory_stats();
  const HostMemoryStats before = host_memory_stats();
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i] {
      std::vector<Tensor> live;
      for (int k = 0; k < kEach; ++k) {
        live.push_back(empty({1 + (k + i) % 40}));
        if (live.size() > 8) live.erase(live.begin());
      }
    });
  }
  for (auto& t : threads) t.join();
  const HostMemoryStats after = host_memory_stats();
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.allocations - before.allocations == kThreads * kEach);
  CHECK(after.frees - before.frees == kThreads * kEach);
  // at most 9 blocks of at most three lines alive per thread at a time
  CHECK(after.peak_allocated_bytes > before.allocated_bytes);
  CHECK(after.peak_allocated_bytes <= before.allocated_bytes + kThreads * 9 * 192);
}
