// HostMemory.h: the CPU allocator's own counts, as tensor/Cuda.h's memory_stats are the CUDA
// caching allocator's: every CPU tensor::Storage counts its block when it is allocated and
// again when it is freed, whatever holds it (a tensor, a module's parameter or buffer, an
// optimizer's state, a collective's scratch), so the bytes of one phase of a program (a
// training step, a model being built) are a difference of two readings, or a peak after a
// reset. A block counts as Storage allocates it: the bytes asked for rounded up to whole
// 64-byte lines, and one line for an empty storage (Note [Keeping freed CPU blocks] in
// tensor/Storage.cpp), not malloc's own header and alignment slack; a CUDA storage counts in
// memory_stats instead, and cuda::PinnedBuffer (page-locked staging memory) in neither.
// The counters are process-wide atomics: every thread's storages count, and reading them
// never blocks an allocation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensor {

struct HostMemoryStats {
  size_t allocated_bytes = 0;       // in CPU storages now
  size_t peak_allocated_bytes = 0;  // the most allocated_bytes since the start or the last reset
  uint64_t allocations = 0;         // CPU storages allocated so far
  uint64_t frees = 0;               // and freed: allocations - frees are alive now
};
HostMemoryStats host_memory_stats();
// Starts the peak again from the bytes allocated now (as reset_peak_memory_stats does for a
// CUDA device), so a peak can be measured per phase.
void reset_peak_host_memory_stats();

namespace detail {
// Storage's calls, with the block's size as counted above.
void count_host_allocation(size_t nbytes);
void count_host_free(size_t nbytes);
}  // namespace detail

}  // namespace tensor
