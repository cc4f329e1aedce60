// Storage.cpp: allocation of CPU blocks here, CUDA blocks through the caching allocator.
#include "tensor/Storage.h"

#include <cstdint>
#include <cstdlib>
#include <new>

#include "tensor/Cuda.h"
#include "tensor/HostMemory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tensor {

namespace {
constexpr size_t kCpuAlignment = 64;  // a cache line, and what AVX-512 loads like

// A CPU block's size: whole cache lines, one for an empty storage (what host_memory_stats counts)
size_t cpu_block_bytes(size_t nbytes) {
  const size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  return rounded == 0 ? kCpuAlignment : rounded;
}
}  // namespace

namespace {
thread_local AllocationLimit* current_limit = nullptr;
}

AllocationLimit::AllocationLimit(size_t bytes, std::string why)
    : limit_(bytes), why_(std::move(why)), outer_(current_limit) {
  current_limit = this;
}

AllocationLimit::~AllocationLimit() { current_limit = outer_; }

void AllocationLimit::charge(size_t nbytes, Device device) {
  AllocationLimit* l = current_limit;
  if (!l) return;
  if (nbytes > l->limit_ - l->used_) {
    throw AllocationLimitExceeded(detail::concat("tensor::Storage: allocating ", nbytes, " bytes on ", device.str(),
                                                 " would exceed ", l->limit_, " bytes (", l->used_,
                                                 " used): ", l->why_));
  }
  l->used_ += nbytes;
}

namespace {
// Note [Keeping freed CPU blocks]
// A training loop frees and reallocates the same activations every step. Two glibc habits made
// each of those blocks fresh pages every step, a page fault and a page clear per 4 KiB: 10 % of
// the fashion step's CPU time (about 2,000 faults a step; now under 100).
// - glibc hands a block of 128 KiB or more back to the kernel on free (mmap, then munmap; the
//   limit rises with the blocks freed, to 32 MiB at most) and trims a free heap top beyond twice
//   that. Set once, before the first CPU block: blocks up to 32 MiB (glibc's largest threshold)
//   come from the heap, and up to 512 MiB of free heap top is kept for the next step, as the
//   CUDA caching allocator keeps its blocks. Process-wide, as these settings are; larger blocks
//   are still mapped and unmapped each time.
// - aligned_alloc (memalign) asks for size + alignment + a header and returns the rest, so the
//   hole a freed block leaves is too small for the same request again, and the heap grew
//   instead of reusing it. Blocks are plain malloc'ed, kCpuAlignment bytes larger, and aligned
//   here, the malloc'ed pointer kept in the word before the aligned one (malloc's blocks are
//   16-byte aligned, so there is always room).
void keep_freed_cpu_blocks() {
#if defined(__GLIBC__)
  [[maybe_unused]] static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
#endif
}

void* cpu_allocate(size_t nbytes) {
  keep_freed_cpu_blocks();
  void* raw = std::malloc(nbytes + kCpuAlignment);
  if (!raw) return nullptr;
  const uintptr_t aligned =
      (reinterpret_cast<uintptr_t>(raw) + sizeof(void*) + kCpuAlignment - 1) & ~(kCpuAlignment - 1);
  void* data = reinterpret_cast<void*>(aligned);
  static_cast<void**>(data)[-1] = raw;
  return data;
}

void cpu_free(void* data) {
  if (data) std::free(static_cast<void**>(data)[-1]);
}
}  // namespace

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  AllocationLimit::charge(nbytes, device);
  if (device.is_cuda()) {
    data_ = cuda::allocate(nbytes, device.index);
    return;
  }
  // whole cache lines (and the alignment slack of cpu_allocate); rounding up must not wrap around
  TENSOR_CHECK(nbytes <= static_cast<size_t>(PTRDIFF_MAX) - kCpuAlignment, "tensor::Storage: cannot allocate ", nbytes,
               " bytes on cpu: more than the address space holds");
  const size_t block = cpu_block_bytes(nbytes);
  data_ = cpu_allocate(block);
  if (!data_) {
    throw Error("tensor::Storage: cannot allocate " + std::to_string(nbytes) + " bytes on cpu");
  }
  detail::count_host_allocation(block);
}

Storage::~Storage() {
  if (device_.is_cuda()) {
    cuda::deallocate(data_, device_.index);  // never throws
  } else {
    cpu_free(data_);
    detail::count_host_free(cpu_block_bytes(nbytes_));
  }
}

}  // namespace tensor
