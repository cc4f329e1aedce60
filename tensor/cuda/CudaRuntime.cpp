// CudaRuntime.cpp: the CUDA half of tensor/Cuda.h: device queries, one stream per device,
// host/device copies and the caching allocator behind every CUDA Storage.
// Note [Caching allocator]: requests are rounded (512 B for small ones, 2 MiB for large
// ones) and served from a per-device free list (size -> block), taking the smallest cached
// block that fits and is at most twice the rounded request; cudaMalloc runs only when none
// does. Blocks are never split: a request counts its rounded size as allocated, and the rest
// of a larger block it was served from counts as reserved only (as PyTorch's split blocks).
// See Note [One stream per device] in Cuda.h for why a freed block can be handed out again at
// once, and Note [CUDA teardown] there for how all of it is given back at shutdown() and at exit.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/Cuda.h"
#include "tensor/DType.h"
#include "tensor/Generator.h"
#include "tensor/Kernels.h"
#include "tensor/cuda/CudaCheck.h"
#include "tensor/cuda/GraphMemsets.h"

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

using FreeBlocks = std::multimap<size_t, void*>;  // cached, unused: size -> pointer

struct UsedBlock {
  size_t block;      // the block's size
  size_t requested;  // the request, rounded: what it counts as allocated
};

struct DeviceState {
  cudaStream_t stream = nullptr;
  // Note [The device's side stream] in Cuda.h: the second stream and its two events
  cudaStream_t side = nullptr;
  cudaEvent_t forked = nullptr, joined = nullptr;
  FreeBlocks free_blocks;
  std::unordered_map<void*, UsedBlock> used_blocks;  // in tensors
  MemoryStats stats;
  size_t limit = 0;  // set_memory_limit; 0: none
  // CUDA graphs' private pools (Note [CUDA graphs] in Cuda.h): each pool's unused blocks, and
  // the owner of every block (in a tensor or unused) that belongs to a pool. `capturing` is
  // the pool of the capture under way, 0 when none.
  std::unordered_map<uint64_t, FreeBlocks> pools;
  std::unordered_map<void*, uint64_t> pool_of;
  uint64_t capturing = 0;
  std::vector<Graph::RandomBinding>* capture_random = nullptr;  // the capture's generators
};

// Process-wide state. Deliberately leaked: Storage destructors of static tensors may run
// after other static destructors; what it holds on the devices is given back by shutdown()
// and the exit hook instead (Note [CUDA teardown] in Cuda.h).
struct Runtime {
  std::mutex mutex;
  std::vector<DeviceState> devices;
  bool exited = false;     // the exit hook ran: blocks freed later go straight to the driver
  uint64_t next_pool = 1;  // ids of CUDA graphs' memory pools

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

// The smallest cached block that fits `size` and is at most kMaxReuseFactor times larger,
// taken out of `blocks`; nullptr when none.
void* take_cached(FreeBlocks& blocks, size_t size, size_t& block_size) {
  const auto cached = blocks.lower_bound(size);
  if (cached == blocks.end() || cached->first / kMaxReuseFactor > size) return nullptr;
  block_size = cached->first;
  void* ptr = cached->second;
  blocks.erase(cached);
  return ptr;
}

// Counts a new block from the driver.
void add_reserved(MemoryStats& stats, size_t size) {
  stats.reserved_bytes += size;
  stats.peak_reserved_bytes = std::max(stats.peak_reserved_bytes, stats.reserved_bytes);
  ++stats.device_mallocs;
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
      if (!state.stream && state.free_blocks.empty() && state.pools.empty()) continue;
      ignore_status(cudaSetDevice(static_cast<int>(i)));
      if (state.stream) ignore_status(cudaStreamSynchronize(state.stream));
      // graphs still alive keep nothing: their pools' unused blocks go too, and their blocks
      // in tensors return to the ordinary cache when freed
      for (auto& [id, blocks] : state.pools) {
        for (const auto& entry : blocks) state.stats.cached_bytes += entry.first;
        state.free_blocks.merge(blocks);
      }
      state.pools.clear();
      state.pool_of.clear();
      state.capturing = 0;
      for (const auto& [size, ptr] : state.free_blocks) {
        ignore_status(cudaFree(ptr));
        state.stats.reserved_bytes -= size;
        ++state.stats.device_frees;
      }
      state.stats.cached_bytes = 0;
      state.free_blocks.clear();
      if (state.side) {
        ignore_status(cudaStreamSynchronize(state.side));
        ignore_status(cudaStreamDestroy(state.side));
        ignore_status(cudaEventDestroy(state.forked));
        ignore_status(cudaEventDestroy(state.joined));
      }
      state.side = nullptr;
      state.forked = state.joined = nullptr;
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
    state.stats.cached_bytes -= it->first;
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

void* fork_side(int index) {
  index = resolve(index, "tensor::cuda::fork_side");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  DeviceState& state = runtime.devices[static_cast<size_t>(index)];
  const cudaStream_t main = stream_locked(state, index);
  DeviceGuard guard(index);
  if (!state.side) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&state.side, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&state.forked, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&state.joined, cudaEventDisableTiming));
  }
  CUDA_CHECK(cudaEventRecord(state.forked, main));
  CUDA_CHECK(cudaStreamWaitEvent(state.side, state.forked, 0));
  return state.side;
}

void join_side(int index) {
  index = resolve(index, "tensor::cuda::join_side");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  DeviceState& state = runtime.devices[static_cast<size_t>(index)];
  TENSOR_CHECK(state.side, "tensor::cuda::join_side: no fork_side on cuda:", index, " to join");
  DeviceGuard guard(index);
  CUDA_CHECK(cudaEventRecord(state.joined, state.side));
  CUDA_CHECK(cudaStreamWaitEvent(stream_locked(state, index), state.joined, 0));
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
  stats.peak_reserved_bytes = stats.reserved_bytes;
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
  // See Note [Caching allocator]
  const size_t size = round_size(nbytes);
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  DeviceState& state = runtime.devices[static_cast<size_t>(index)];
  MemoryStats& stats = state.stats;

  void* ptr = nullptr;
  size_t block_size = size;
  if (state.capturing != 0) {
    // A CUDA graph is being captured: its pool serves the request, or a new block joins the
    // pool. Nothing is given back to the driver here (cudaFree would break the capture).
    ptr = take_cached(state.pools[state.capturing], size, block_size);
    if (!ptr) {
      DeviceGuard guard(index);
      const bool within_limit = state.limit == 0 || stats.reserved_bytes + size <= state.limit;
      // cudaMalloc is an 'unsafe' call in the capture's mode and would invalidate it; it does
      // not touch the stream, so this thread's mode is relaxed around it (as PyTorch's allocator does)
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
      const cudaError_t status = within_limit ? cudaMalloc(&ptr, size) : cudaErrorMemoryAllocation;
      CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
      if (status != cudaSuccess) {
        cudaGetLastError();
        throw Error(::tensor::detail::concat("tensor::cuda::allocate: cannot allocate ", nbytes, " bytes (",
                                             human_bytes(nbytes), ") on cuda:", index,
                                             " while a CUDA graph is captured: ", cudaGetErrorString(status),
                                             " (cached blocks cannot be released during a capture)"));
      }
      add_reserved(stats, size);
    }
    state.pool_of[ptr] = state.capturing;
  } else if ((ptr = take_cached(state.free_blocks, size, block_size)) != nullptr) {
    stats.cached_bytes -= block_size;  // served from the cache
  } else {
    DeviceGuard guard(index);
    const auto within_limit = [&] { return state.limit == 0 || stats.reserved_bytes + size <= state.limit; };
    cudaError_t status = within_limit() ? cudaMalloc(&ptr, size) : cudaErrorMemoryAllocation;
    const size_t cached_before = stats.cached_bytes;
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
    add_reserved(stats, size);
  }
  state.used_blocks.emplace(ptr, UsedBlock{block_size, size});
  stats.allocated_bytes += size;
  if (stats.allocated_bytes > stats.peak_allocated_bytes) {
    stats.peak_allocated_bytes = stats.allocated_bytes;
  }
  return ptr;
}

namespace {
// deallocate and release: back to the cache, or with `to_driver` to the driver. Reports
// problems on stderr and never throws (Storage's destructor calls it).
void free_block(void* ptr, int index, bool to_driver, const char* op) noexcept {
  if (!ptr) return;
  try {
    Runtime& runtime = Runtime::get();
    std::lock_guard<std::mutex> lock(runtime.mutex);
    if (index < 0 || static_cast<size_t>(index) >= runtime.devices.size()) {
      std::fprintf(stderr, "%s: invalid device cuda:%d for %p\n", op, index, ptr);
      return;
    }
    DeviceState& state = runtime.devices[static_cast<size_t>(index)];
    const auto used = state.used_blocks.find(ptr);
    if (used == state.used_blocks.end()) {
      std::fprintf(stderr, "%s: %p was not allocated on cuda:%d\n", op, ptr, index);
      return;
    }
    const size_t size = used->second.block;
    state.stats.allocated_bytes -= used->second.requested;
    state.used_blocks.erase(used);
    // A graph's block goes back to its pool; so does any block freed while a graph is
    // captured, since the graph may write it again on replay (Note [CUDA graphs] in Cuda.h).
    const auto owner = state.pool_of.find(ptr);
    const uint64_t pool = owner != state.pool_of.end() ? owner->second : state.capturing;
    if (pool != 0) {
      const auto blocks = state.pools.find(pool);
      if (blocks != state.pools.end()) {
        state.pool_of[ptr] = pool;
        blocks->second.emplace(size, ptr);
        return;
      }
      state.pool_of.erase(ptr);
    }
    // after the exit hook nobody will take it from the cache
    if (runtime.exited || to_driver) {
      int previous = -1;
      ignore_status(cudaGetDevice(&previous));
      ignore_status(cudaSetDevice(index));
      // queued work may still use the block: cudaFree waits for the device, the stream first
      if (!runtime.exited && state.stream) ignore_status(cudaStreamSynchronize(state.stream));
      ignore_status(cudaFree(ptr));
      if (previous >= 0) ignore_status(cudaSetDevice(previous));
      state.stats.reserved_bytes -= size;
      ++state.stats.device_frees;
      return;
    }
    state.free_blocks.emplace(size, ptr);
    state.stats.cached_bytes += size;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", op, e.what());
  }
}
}  // namespace

void deallocate(void* ptr, int index) { free_block(ptr, index, false, "tensor::cuda::deallocate"); }
void release(void* ptr, int index) { free_block(ptr, index, true, "tensor::cuda::release"); }

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

namespace {
// Gives a graph's pool back: its unused blocks join the ordinary cache, and its blocks still in
// tensors go there when freed. Never throws (destructors call it).
void release_pool(int index, uint64_t pool) noexcept {
  try {
    Runtime& runtime = Runtime::get();
    std::lock_guard<std::mutex> lock(runtime.mutex);
    if (index < 0 || static_cast<size_t>(index) >= runtime.devices.size()) return;
    DeviceState& state = runtime.devices[static_cast<size_t>(index)];
    if (state.capturing == pool) state.capturing = 0;
    const auto blocks = state.pools.find(pool);
    if (blocks == state.pools.end()) return;  // shutdown() took it already
    for (const auto& entry : blocks->second) state.stats.cached_bytes += entry.first;
    state.free_blocks.merge(blocks->second);
    state.pools.erase(blocks);
    std::erase_if(state.pool_of, [pool](const auto& entry) { return entry.second == pool; });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensor::cuda::Graph: %s\n", e.what());
  }
}
}  // namespace

Graph Graph::capture(const std::function<void()>& work, int index) {
  index = resolve(index, "tensor::cuda::Graph::capture");
  const std::string where = ::tensor::detail::concat("tensor::cuda::Graph::capture on cuda:", index, ": ");
  DeviceGuard guard(index);
  cudaStream_t s = nullptr;
  uint64_t pool = 0;
  std::vector<RandomBinding> bindings;
  // Ends the capture's bookkeeping; on failure also frees the random state words and the pool.
  const auto finish = [&](bool failed) noexcept {
    {
      Runtime& runtime = Runtime::get();
      std::lock_guard<std::mutex> lock(runtime.mutex);
      DeviceState& state = runtime.devices[static_cast<size_t>(index)];
      state.capturing = 0;
      state.capture_random = nullptr;
    }
    if (!failed) return;
    for (const RandomBinding& b : bindings) deallocate(b.state, index);
    release_pool(index, pool);
  };
  {
    Runtime& runtime = Runtime::get();
    std::lock_guard<std::mutex> lock(runtime.mutex);
    DeviceState& state = runtime.devices[static_cast<size_t>(index)];
    TENSOR_CHECK(state.capturing == 0, where, "another capture is under way on this device");
    s = stream_locked(state, index);
    pool = runtime.next_pool++;
    state.pools[pool];
    state.capturing = pool;
    state.capture_random = &bindings;
  }
  const cudaError_t began = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (began != cudaSuccess) {
    cudaGetLastError();
    finish(true);
    throw Error(where + "cudaStreamBeginCapture failed: " + cudaGetErrorString(began));
  }
  std::string failure;
  try {
    work();
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "an exception that is not a std::exception";
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  if (!failure.empty() || ended != cudaSuccess) {
    cudaGetLastError();
    if (graph) ignore_status(cudaGraphDestroy(graph));
    finish(true);
    throw Error(
        where +
        (failure.empty() ? std::string("the capture was invalidated (") + cudaGetErrorString(ended) + ")" : failure) +
        "; the captured work may not wait for the device (a value read to the host such as a criterion's "
        "loss, synchronize(), a copy to host memory): warm up first, then capture the steady-state work");
  }
  try {
    memset_nodes_to_kernels(graph);  // Note [Memset nodes in CUDA graphs] in GraphMemsets.cu
  } catch (const std::exception& e) {
    cudaGetLastError();  // the failed call's status, so that the next launch does not report it
    ignore_status(cudaGraphDestroy(graph));
    finish(true);
    throw Error(where + e.what());
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  if (instantiated != cudaSuccess) {
    cudaGetLastError();
    ignore_status(cudaGraphDestroy(graph));
    finish(true);
    throw Error(where + "cudaGraphInstantiate failed: " + cudaGetErrorString(instantiated));
  }
  finish(false);
  Graph g;
  g.random_ = std::move(bindings);
  g.graph_ = graph;
  g.exec_ = exec;
  g.device_ = index;
  g.pool_ = pool;
  return g;
}

const uint64_t* Graph::random_state_for_capture(int index, Generator& gen, uint64_t n, uint64_t& relative) {
  index = resolve(index, "tensor::cuda::Graph::random_state_for_capture");
  Runtime& runtime = Runtime::get();
  std::unique_lock<std::mutex> lock(runtime.mutex);
  DeviceState& state = runtime.devices[static_cast<size_t>(index)];
  if (state.capturing == 0 || state.capture_random == nullptr) return nullptr;
  std::vector<RandomBinding>* bindings = state.capture_random;
  auto found = std::find_if(bindings->begin(), bindings->end(), [&](const RandomBinding& b) { return b.gen == &gen; });
  if (found == bindings->end()) {
    lock.unlock();  // allocate takes the lock; the words come from the graph's pool
    auto* words = static_cast<uint64_t*>(allocate(2 * sizeof(uint64_t), index));
    lock.lock();
    bindings->push_back(RandomBinding{&gen, words, 0});
    found = std::prev(bindings->end());
  }
  relative = found->draws;
  found->draws += n;
  return found->state;
}

uint64_t Graph::capture_draws(int index, const Generator& gen) {
  index = resolve(index, "tensor::cuda::Graph::capture_draws");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  const DeviceState& state = runtime.devices[static_cast<size_t>(index)];
  if (state.capturing == 0 || state.capture_random == nullptr) return 0;
  const std::vector<RandomBinding>& bindings = *state.capture_random;
  auto found = std::find_if(bindings.begin(), bindings.end(), [&](const RandomBinding& b) { return b.gen == &gen; });
  return found == bindings.end() ? 0 : found->draws;
}

void Graph::set_capture_draws(int index, const Generator& gen, uint64_t draws) {
  index = resolve(index, "tensor::cuda::Graph::set_capture_draws");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  DeviceState& state = runtime.devices[static_cast<size_t>(index)];
  TENSOR_CHECK(state.capturing != 0 && state.capture_random != nullptr,
               "tensor::cuda::Graph::set_capture_draws: expected a capture under way on cuda:", index, ", got none");
  std::vector<RandomBinding>& bindings = *state.capture_random;
  auto found = std::find_if(bindings.begin(), bindings.end(), [&](const RandomBinding& b) { return b.gen == &gen; });
  if (found == bindings.end()) {  // nothing drawn from gen yet: only 0 is its count
    TENSOR_CHECK(draws == 0, "tensor::cuda::Graph::set_capture_draws: expected 0 draws for a generator the capture ",
                 "has not drawn from, got ", draws);
    return;
  }
  found->draws = draws;
}

bool Graph::capturing(int index) {
  // No visible device (a CUDA build on a machine without a GPU): nothing can be capturing, as
  // in a build without CUDA; resolve() would throw "no CUDA device is visible".
  if (device_count() == 0) return false;
  index = resolve(index, "tensor::cuda::Graph::capturing");
  Runtime& runtime = Runtime::get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  return runtime.devices[static_cast<size_t>(index)].capturing != 0;
}

void Graph::replay() const {
  TENSOR_CHECK(exec_ != nullptr, "tensor::cuda::Graph::replay: the graph is empty (moved from, or never captured)");
  DeviceGuard guard(device_);
  // the captured fills' seed and offset as of now (Note [Random fills in CUDA graphs])
  for (const RandomBinding& b : random_) {
    ::tensor::kernels::cuda_set_random_state(b.state, b.gen->seed(), b.gen->reserve(b.draws), device_);
  }
  CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream(device_))));
}

size_t Graph::nodes() const {
  if (!graph_) return 0;
  size_t n = 0;
  CUDA_CHECK(cudaGraphGetNodes(static_cast<cudaGraph_t>(graph_), nullptr, &n));
  return n;
}

// Waits for the graph's launches (their memory goes back to the cache), then destroys it.
void Graph::reset() noexcept {
  if (!exec_ && !graph_) return;
  bool exited = false;
  {
    Runtime& runtime = Runtime::get();
    std::lock_guard<std::mutex> lock(runtime.mutex);
    exited = runtime.exited;
    DeviceState& state = runtime.devices[static_cast<size_t>(device_)];
    if (!exited && state.stream) {
      int previous = -1;
      ignore_status(cudaGetDevice(&previous));
      ignore_status(cudaSetDevice(device_));
      ignore_status(cudaStreamSynchronize(state.stream));
      if (previous >= 0) ignore_status(cudaSetDevice(previous));
    }
  }
  if (exec_) ignore_status(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_)));
  if (graph_) ignore_status(cudaGraphDestroy(static_cast<cudaGraph_t>(graph_)));
  for (const RandomBinding& b : random_) deallocate(b.state, device_);
  random_.clear();
  release_pool(device_, pool_);
  exec_ = graph_ = nullptr;
  pool_ = 0;
}

Graph::~Graph() { reset(); }

Graph::Graph(Graph&& other) noexcept
    : random_(std::move(other.random_)),
      graph_(other.graph_),
      exec_(other.exec_),
      device_(other.device_),
      pool_(other.pool_) {
  other.graph_ = other.exec_ = nullptr;
  other.pool_ = 0;
}

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    reset();
    random_ = std::move(other.random_);
    graph_ = other.graph_;
    exec_ = other.exec_;
    device_ = other.device_;
    pool_ = other.pool_;
    other.graph_ = other.exec_ = nullptr;
    other.pool_ = 0;
  }
  return *this;
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
