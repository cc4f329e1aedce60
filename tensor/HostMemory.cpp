// HostMemory.cpp: the CPU allocator's counters (tensor/HostMemory.h), updated by Storage.
#include "tensor/HostMemory.h"

#include <atomic>

namespace tensor {

namespace {
std::atomic<size_t> allocated{0}, peak{0};
std::atomic<uint64_t> allocations{0}, frees{0};
}  // namespace

HostMemoryStats host_memory_stats() {
  HostMemoryStats s;
  s.allocated_bytes = allocated.load(std::memory_order_relaxed);
  s.peak_allocated_bytes = peak.load(std::memory_order_relaxed);
  s.allocations = allocations.load(std::memory_order_relaxed);
  s.frees = frees.load(std::memory_order_relaxed);
  return s;
}

void reset_peak_host_memory_stats() {
  peak.store(allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

namespace detail {

void count_host_allocation(size_t nbytes) {
  const size_t now = allocated.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  size_t seen = peak.load(std::memory_order_relaxed);
  while (seen < now && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
  allocations.fetch_add(1, std::memory_order_relaxed);
}

void count_host_free(size_t nbytes) {
  allocated.fetch_sub(nbytes, std::memory_order_relaxed);
  frees.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace detail

}  // namespace tensor
