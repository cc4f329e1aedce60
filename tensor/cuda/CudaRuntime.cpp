// CudaRuntime.cpp: the CUDA half of tensor/Cuda.h: device queries, one stream per device,
// host/device copies and the caching allocator behind every CUDA Storage.
// Note [Caching allocator]: requests are rounded (512 B for small ones, 2 MiB for large
// ones) and served from a per-device free list (size -> block), taking the smallest cached
// block that fits and is at most twice the rounded request; cudaMalloc runs only when none
// does. Blocks are never split. See Note [One stream per device] in Cuda.h for why a freed
// block can be handed out again at once, and Note [CUDA teardown] there for how all of it is
// given back at shutdown() and at exit.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/Cuda.h"
#include "tensor/DType.h"
#include "tensor/cuda/CudaCheck.h"

namespace tensor::cuda {

namespace {

constexpr size_t kSmallGranularity = 512;
constexpr size_t kLargeThreshold = size_t{1} << 20;    // above this a request is "large"
constexpr size_t kLargeGranularity = size_t{2} << 20;  // 2 MiB
constexpr size_t kMaxReuseFactor = 2;                  // a cached block may be this much larger

std::string human_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  return text;
}

int query_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error for a query, so clear it
    return 0;
  }
  return count;
}

struct DeviceState {
  cudaStream_t stream = nullptr;
  std::multimap<size_t, void*> free_blocks;     // cached, unused: size -> pointer
  std::unordered_map<void*, size_t> used_blocks;  // in tensors: pointer -> size
  MemoryStats stats;
  size_t limit = 0;  // set_memory_limit; 0: none
};

// Process-wide state. Deliberately leaked: Storage destructors of static tensors may run
// after other static destructors; what it holds on the devices is given back by shutdown()
// and the exit hook instead (Note [CUDA teardown] in Cuda.h).
struct Runtime {
  std::mutex mutex;
  std::vector<DeviceState> devices;
  bool exited = false;  // the exit hook ran: blocks freed later go straight to the driver

  Runtime() : devices(static_cast<size_t>(query_device_count())) {}

  static Runtime& get() {
    static Runtime* runtime = new Runtime();
    return *runtime;
  }
};

int resolve(int index, const char* op) {
  const int count = device_count();
  TENSOR_CHECK(count > 0, op, ": no CUDA device is visible");
  if (index == -1) index = current_device();
  TENSOR_CHECK(index >= 0 && index < count, op, ": invalid device cuda:", index, " (",
               count, " device", count == 1 ? "" : "s", " visible)");
  return index;
}

size_t round_size(size_t nbytes) {
  const size_t granularity = nbytes <= kLargeThreshold ? kSmallGranularity : kLargeGranularity;
  TENSOR_CHECK(nbytes <= SIZE_MAX - granularity, "tensor::cuda::allocate: request of ", nbytes,
               " bytes is too large");
  return (nbytes + granularity - 1) / granularity * granularity;
}

// The shutdown hooks of upper layers, and the exit hook's registrations.
struct Hooks {
  std::mutex mutex;
  std::vector<void (*)()> hooks;
  int exit_registrations = 0;
  static Hooks& get() {
    static Hooks* hooks = new Hooks();  // leaked, like Runtime
    return *hooks;
  }
};

void release_all(bool at_exit) noexcept;
void at_exit() { release_all(true); }

// Registers the exit hook (again). Called once CUDA is initialised (the first stream or
// device block) and after each new shutdown hook, so that the newest registration runs
// before the teardown of anything those hooks use. atexit guarantees 32 registrations; a
// handful is all that is needed.
void register_exit_hook_locked(Hooks& h) {
  if (h.exit_registrations >= 8) return;
  if (std::atexit(at_exit) == 0) ++h.exit_registrations;
}

void ensure_exit_hook() {
  static std::once_flag once;
  std::call_once(once, [] {
    Hooks& h = Hooks::get();
    std::lock_guard<std::mutex> lock(h.mutex);
    register_exit_hook_locked(h);
  });
}

// Must be called with the runtime's mutex held.
cudaStream_t stream_locked(DeviceState& state, int index) {
  if (!state.stream) {
    DeviceGuard guard(index);
    CUDA_CHECK(cudaStreamCreateWithFlags(&state.stream, cudaStreamNonBlocking));
    ensure_exit_hook();
  }
  return state.stream;
}

// Ignores a status on the teardown path (the runtime may be unloading): clears it.
void ignore_status(cudaError_t status) {
  if (status != cudaSuccess) cudaGetLastError();
}

// shutdown() and the exit hook: the upper layers' hooks (newest first), then every cached
// block and stream of every device. Never throws.
void release_all(bool at_exit) noexcept {
  std::vector<void (*)()> hooks;
  {
    Hooks& h = Hooks::get();
    std::lock_guard<std::mutex> lock(h.mutex);
    hooks = h.hooks;
  }
  for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) {
    try {
      (*it)();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tensor::cuda::shutdown: a shutdown hook failed: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "tensor::cuda::shutdown: a shutdown hook failed\n");
    }
  }
  try {
    Runtime& runtime = Runtime::get();
    std::lock_guard<std::mutex> lock(runtime.mutex);
    if (at_exit) runtime.exited = true;
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) {
      cudaGetLastError();
      previous = -1;
    }
    for (size_t i = 0; i < runtime.devices.size(); ++i) {
      DeviceState& state = runtime.devices[i];
      if (!state.stream && state.free_blocks.empty()) continue;
      ignore_status(cudaSetDevice(static_cast<int>(i)));
      if (state.stream) ignore_status(cudaStreamSynchronize(state.stream));
      for (const auto& [size, ptr] : state.free_blocks) {
        ignore_status(cudaFree(ptr));
        state.stats.reserved_bytes -= size;
        ++state.stats.device_frees;
      }
      state.free_blocks.clear();
      if (state.stream) ignore_status(cudaStreamDestroy(state.stream));
      state.stream = nullptr;
    }
    if (previous >= 0) ignore_status(cudaSetDevice(previous));
  } catch (const std::exception& e) {  // a mutex error; nothing else here throws
    std::fprintf(stderr, "tensor::cuda::shutdown: %s\n", e.what());
  }
}

// Gives every cached block of a device back to the driver. Mutex held; the device's
// stream is drained first since a cached block may still be read by queued kernels.
void release_cached_locked(DeviceState& state, int index) {
  if (state.free_blocks.empty()) return;
  DeviceGuard guard(index);
  if (state.stream) CUDA_CHECK(cudaStreamSynchronize(state.stream));
  while (!state.free_blocks.empty()) {
    const auto it = state.free_blocks.begin();
    CUDA_CHECK(cudaFree(it->second));
    state.stats.reserved_bytes -= it->first;
    ++state.stats.device_frees;
    state.free_blocks.erase(it);
  }
}

}  // namespace

bool built_with_cuda() { return true; }

int device_count() {
  static const int count = query_device_count();
  return count;
}

bool is_available() { return device_count() > 0; }

int current_device() {
  int index = 0;
  CUDA_CHECK(cudaGetDevice(&index));
  return index;
}

void set_device(int index) {
  const int count = device_count();
  TENSOR_CHECK(index >= 0 && index < count, "tensor::cuda::set_device: invalid device cuda:",
               index, " (", count, " device", count == 1 ? "" : "s", " visible)");
  CUDA_CHECK(cudaSetDevice(index));
}

void* stream(int index) {
  index = resolve(index, "tensor::cuda::stream");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  return stream_locked(runtime.devices[static_cast<size_t>(index)], index);
}

void synchronize(int index) {
  index = resolve(index, "tensor::cuda::synchronize");
  cudaStream_t s = static_cast<cudaStream_t>(stream(index));
  DeviceGuard guard(index);
  CUDA_CHECK(cudaStreamSynchronize(s));
}

MemoryStats memory_stats(int index) {
  index = resolve(index, "tensor::cuda::memory_stats");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  return runtime.devices[static_cast<size_t>(index)].stats;
}

void reset_peak_memory_stats(int index) {
  index = resolve(index, "tensor::cuda::reset_peak_memory_stats");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  MemoryStats& stats = runtime.devices[static_cast<size_t>(index)].stats;
  stats.peak_allocated_bytes = stats.allocated_bytes;
}

void empty_cache() {
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  for (size_t i = 0; i < runtime.devices.size(); ++i) {
    release_cached_locked(runtime.devices[i], static_cast<int>(i));
  }
}

// A zero-byte request gets nullptr, which deallocate accepts.
void* allocate(size_t nbytes, int index) {
  if (nbytes == 0) return nullptr;
  index = resolve(index, "tensor::cuda::allocate");
  const size_t size = round_size(nbytes);
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  DeviceState& state = runtime.devices[static_cast<size_t>(index)];
  MemoryStats& stats = state.stats;

  void* ptr = nullptr;
  size_t block_size = size;
  const auto cached = state.free_blocks.lower_bound(size);
  if (cached != state.free_blocks.end() && cached->first / kMaxReuseFactor <= size) {
    block_size = cached->first;
    ptr = cached->second;
    state.free_blocks.erase(cached);
  } else {
    DeviceGuard guard(index);
    const auto within_limit = [&] { return state.limit == 0 || stats.reserved_bytes + size <= state.limit; };
    cudaError_t status = within_limit() ? cudaMalloc(&ptr, size) : cudaErrorMemoryAllocation;
    const size_t cached_before = stats.reserved_bytes - stats.allocated_bytes;
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear it, or the next launch check would report it
      release_cached_locked(state, index);
      status = within_limit() ? cudaMalloc(&ptr, size) : cudaErrorMemoryAllocation;
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      ignore_status(cudaMemGetInfo(&free_bytes, &total_bytes));
      throw Error(::tensor::detail::concat(
          "tensor::cuda::allocate: out of memory on cuda:", index, ": cannot allocate ", nbytes, " bytes (",
          human_bytes(nbytes), "); the device has ", human_bytes(free_bytes), " free of ", human_bytes(total_bytes),
          "; the caching allocator holds ", human_bytes(stats.reserved_bytes), " (", human_bytes(stats.allocated_bytes),
          " in tensors) after releasing ", human_bytes(cached_before), " of cached blocks and retrying",
          state.limit ? "; its limit is " + human_bytes(state.limit) + " (tensor::cuda::set_memory_limit)" : ""));
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      detail::throw_cuda_error(status, "cudaMalloc", __FILE__, __LINE__);
    }
    ensure_exit_hook();
    stats.reserved_bytes += size;
    ++stats.device_mallocs;
  }
  state.used_blocks.emplace(ptr, block_size);
  stats.allocated_bytes += block_size;
  if (stats.allocated_bytes > stats.peak_allocated_bytes) {
    stats.peak_allocated_bytes = stats.allocated_bytes;
  }
  return ptr;
}

// Called from Storage's destructor: reports problems on stderr and never throws.
void deallocate(void* ptr, int index) {
  if (!ptr) return;
  try {
    Runtime& runtime = Runtime::get();
    std::lock_guard<std::mutex> lock(runtime.mutex);
    if (index < 0 || static_cast<size_t>(index) >= runtime.devices.size()) {
      std::fprintf(stderr, "tensor::cuda::deallocate: invalid device cuda:%d for %p\n", index, ptr);
      return;
    }
    DeviceState& state = runtime.devices[static_cast<size_t>(index)];
    const auto used = state.used_blocks.find(ptr);
    if (used == state.used_blocks.end()) {
      std::fprintf(stderr, "tensor::cuda::deallocate: %p was not allocated on cuda:%d\n", ptr,
                   index);
      return;
    }
    const size_t size = used->second;
    state.used_blocks.erase(used);
    state.stats.allocated_bytes -= size;
    if (runtime.exited) {  // after the exit hook: nobody will take it from the cache
      int previous = -1;
      ignore_status(cudaGetDevice(&previous));
      ignore_status(cudaSetDevice(index));
      ignore_status(cudaFree(ptr));
      if (previous >= 0) ignore_status(cudaSetDevice(previous));
      state.stats.reserved_bytes -= size;
      ++state.stats.device_frees;
      return;
    }
    state.free_blocks.emplace(size, ptr);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensor::cuda::deallocate: %s\n", e.what());
  }
}

void set_memory_limit(size_t bytes, int index) {
  index = resolve(index, "tensor::cuda::set_memory_limit");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  runtime.devices[static_cast<size_t>(index)].limit = bytes;
}

size_t memory_limit(int index) {
  index = resolve(index, "tensor::cuda::memory_limit");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  return runtime.devices[static_cast<size_t>(index)].limit;
}

void shutdown() { release_all(false); }

void register_shutdown_hook(void (*f)()) {
  if (!f) return;
  Hooks& h = Hooks::get();
  std::lock_guard<std::mutex> lock(h.mutex);
  bool known = false;
  for (auto* g : h.hooks) known = known || g == f;
  if (!known) h.hooks.push_back(f);
  register_exit_hook_locked(h);
}

void copy_bytes(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t nbytes,
                int device) {
  if (nbytes == 0) return;
  device = resolve(device, "tensor::cuda::copy_bytes");
  TENSOR_CHECK(dst && src, "tensor::cuda::copy_bytes: null pointer for ", nbytes, " bytes");
  const cudaMemcpyKind kind = dst_on_device
                                  ? (src_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                  : (src_on_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  cudaStream_t s = static_cast<cudaStream_t>(stream(device));
  DeviceGuard guard(device);
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, s));
  // A host destination must hold the bytes on return. A host source is waited for too:
  // CUDA only says a pageable copy "might be synchronous", and callers free their staging
  // buffers as soon as this returns.
  if (!dst_on_device || !src_on_device) CUDA_CHECK(cudaStreamSynchronize(s));
}

DeviceGuard::DeviceGuard(int index) : previous_(current_device()) {
  if (index != previous_) set_device(index);
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_) {
    if (cudaSetDevice(previous_) != cudaSuccess) {
      cudaGetLastError();
      std::fprintf(stderr, "tensor::cuda::DeviceGuard: cannot restore device cuda:%d\n", previous_);
    }
  }
}

}  // namespace tensor::cuda
