// Storage.cpp: allocation of CPU blocks here, CUDA blocks through the caching allocator.
#include "tensor/Storage.h"

#include <cstdlib>
#include <new>

#include "tensor/Cuda.h"

namespace tensor {

namespace {
constexpr size_t kCpuAlignment = 64;  // a cache line, and what AVX-512 loads like
}

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (device.is_cuda()) {
    data_ = cuda::allocate(nbytes, device.index);
    return;
  }
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
