// Storage.h: a block of bytes on one device, shared by every tensor that views it.
// CPU blocks are 64-byte aligned; CUDA blocks come from the caching allocator (Cuda.h),
// so creating and dropping tensors in a training loop does not call cudaMalloc/cudaFree.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

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

// Caps the bytes that Storage may allocate on this thread while the scope lives (the
// innermost scope counts; freeing does not give bytes back). A Storage past the cap throws
// AllocationLimitExceeded naming `why`. nn::load_model builds a network from an untrusted file under one, so
// the file cannot make it allocate more than its weights can fill.
class AllocationLimitExceeded : public Error {
 public:
  using Error::Error;
};

class AllocationLimit {
 public:
  AllocationLimit(size_t bytes, std::string why);
  ~AllocationLimit();
  AllocationLimit(const AllocationLimit&) = delete;
  AllocationLimit& operator=(const AllocationLimit&) = delete;

  size_t used() const { return used_; }
  // Called by Storage: counts `nbytes`, or throws when they do not fit.
  static void charge(size_t nbytes, Device device);

 private:
  size_t limit_, used_ = 0;
  std::string why_;
  AllocationLimit* outer_;
};

}  // namespace tensor
