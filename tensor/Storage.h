// Storage.h: a block of bytes on one device, shared by every tensor that views it.
// CPU blocks are 64-byte aligned; CUDA blocks come from the caching allocator (Cuda.h),
// so creating and dropping tensors in a training loop does not call cudaMalloc/cudaFree.
#pragma once

#include <cstddef>
#include <memory>

#include "tensor/DType.h"

namespace tensor {

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
};

using StoragePtr = std::shared_ptr<Storage>;

}  // namespace tensor
