// Cuda.h: what the tensor layer offers about CUDA devices, with no CUDA header in sight.
// In a CPU-only build every function exists: is_available() is false, device_count() is 0,
// and the rest throw "built without CUDA" (from tensor/cuda/Unavailable.cpp, one place).
// Note [One stream per device]: all work on a device runs on one stream, made lazily, so
// the caching allocator can hand a freed block to the next request without any event.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensor::cuda {

bool built_with_cuda();
bool is_available();  // built with CUDA and at least one device visible
int device_count();
int current_device();
void set_device(int index);
void synchronize(int index = -1);  // -1: the current device
void* stream(int index = -1);       // the device's cudaStream_t, as void*

// The caching allocator.
struct MemoryStats {
  size_t allocated_bytes = 0;       // in tensors now
  size_t reserved_bytes = 0;        // held from the driver (allocated + cached)
  size_t peak_allocated_bytes = 0;
  uint64_t device_mallocs = 0;      // cudaMalloc calls so far
  uint64_t device_frees = 0;
};
MemoryStats memory_stats(int index = -1);
void empty_cache();  // give every cached, unused block back to the driver
void* allocate(size_t nbytes, int index);
void deallocate(void* ptr, int index);

// Copies between host and device memory or within devices, ordered on the device's stream.
// Host destinations are complete when this returns.
void copy_bytes(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t nbytes,
                int device);

// Sets the device for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace tensor::cuda
