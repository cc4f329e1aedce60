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
// Starts peak_allocated_bytes again from the bytes in tensors now (as PyTorch's
// torch.cuda.reset_peak_memory_stats), so a peak can be measured per phase.
void reset_peak_memory_stats(int index = -1);
void empty_cache();  // give every cached, unused block back to the driver
// Allocation: a request the device cannot serve first gives the cached blocks back and
// retries; if it still fails it throws tensor::Error naming the request, the device, its
// free and total memory and the allocator's reserved, in-tensor and cached bytes.
void* allocate(size_t nbytes, int index);
void deallocate(void* ptr, int index);

// A cap on the bytes the caching allocator may hold from the driver on a device (reserved
// bytes, cached ones included); 0, the default, is no cap. A request beyond it is treated as
// the device being out of memory (the cache is released first). For tests of out-of-memory
// paths and for sharing a device; -1: the current device.
void set_memory_limit(size_t bytes, int index = -1);
size_t memory_limit(int index = -1);

// Note [CUDA teardown]
// shutdown() releases what the library holds on every device, in order: first the hooks of
// upper layers (cudnn's handles and workspaces), newest first, then the caching allocator's
// cached blocks and the device streams. Blocks still in tensors stay theirs (they go back
// when those tensors do). The library can be used again afterwards: handles and streams are
// made again on demand; no other thread may use CUDA through it during the call.
// It also runs by itself at exit, from an atexit hook registered once CUDA is initialised
// (and again after each register_shutdown_hook): exit runs those hooks and static
// destructors newest first, so ours runs while the CUDA runtime, registered before it, is
// still alive. Nothing CUDA lives in a static object's destructor (as PyTorch avoids), and
// every status on this path (cudaErrorCudartUnloading at a late exit) is ignored, never
// thrown. Blocks freed after the exit hook go straight back to the driver.
void shutdown();
// Registers f to run at shutdown(), before the allocator releases its cache. f must not
// throw (an exception is caught and reported on stderr). Used by the cudnn layer, which the
// tensor layer may not know.
void register_shutdown_hook(void (*f)());

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
