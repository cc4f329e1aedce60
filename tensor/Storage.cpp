// Storage.cpp: allocation of CPU blocks here, CUDA blocks through the caching allocator.
#include "tensor/Storage.h"

#include <cstdint>
#include <cstdlib>
#include <new>

#include "tensor/Cuda.h"

namespace tensor {

namespace {
constexpr size_t kCpuAlignment = 64;  // a cache line, and what AVX-512 loads like
}

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
    throw AllocationLimitExceeded(detail::concat("tensor::Storage: allocating ", nbytes, " bytes on ", device.str(), " would exceed ",
                               l->limit_, " bytes (", l->used_, " used): ", l->why_));
  }
  l->used_ += nbytes;
}

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  AllocationLimit::charge(nbytes, device);
  if (device.is_cuda()) {
    data_ = cuda::allocate(nbytes, device.index);
    return;
  }
  // aligned_alloc wants a multiple of the alignment; rounding up must not wrap around
  TENSOR_CHECK(nbytes <= static_cast<size_t>(PTRDIFF_MAX) - kCpuAlignment, "tensor::Storage: cannot allocate ",
               nbytes, " bytes on cpu: more than the address space holds");
  const size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  data_ = std::aligned_alloc(kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded);
  if (!data_) {
    throw Error("tensor::Storage: cannot allocate " + std::to_string(nbytes) + " bytes on cpu");
  }
}

Storage::~Storage() {
  if (device_.is_cuda()) {
    cuda::deallocate(data_, device_.index);  // never throws
  } else {
    std::free(data_);
  }
}

}  // namespace tensor
