// Cuda.h: what the tensor layer offers about CUDA devices, with no CUDA header in sight.
// In a CPU-only build every function exists: is_available() is false, device_count() is 0,
// and the rest throw "built without CUDA" (from tensor/cuda/Unavailable.cpp, one place).
// Note [One stream per device]: all work on a device runs on one stream, made lazily, so
// the caching allocator can hand a freed block to the next request without any event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace tensor {
class Generator;
}

namespace tensor::cuda {

bool built_with_cuda();
bool is_available();  // built with CUDA and at least one device visible
int device_count();
int current_device();
void set_device(int index);
void synchronize(int index = -1);  // -1: the current device
void* stream(int index = -1);       // the device's cudaStream_t, as void*
// Note [The device's side stream]: one side stream per device, owned by the runtime like the
// device's stream, for independent work that can overlap it (a convolution's bias gradient beside
// its filter gradient), under Note [Side streams and the caching allocator] in CudaAsync.h (the
// DataLoader's copies use streams of their own from there). fork_side makes the side stream wait
// for everything enqueued on the device's stream so far and returns it (a cudaStream_t as void*);
// join_side makes the device's stream wait for everything enqueued on the side stream. The caller
// joins before it releases any buffer the side stream touched (so the allocator's next user, on
// the device's stream, is ordered after that work) and before returning. Both are enqueued, so a
// CUDA graph capture records the fork and the join as branches of the graph.
void* fork_side(int index);
void join_side(int index);

// The caching allocator. Its counters mean what PyTorch's do: allocated is what requests
// hold (each rounded to the allocator's granularity, as torch.cuda.memory_allocated), reserved
// what the allocator holds from the driver (torch.cuda.memory_reserved): the allocated bytes,
// the cached free blocks, and the rest of blocks a smaller request was served from.
struct MemoryStats {
  size_t allocated_bytes = 0;  // in tensors (and cudnn's workspaces) now
  size_t reserved_bytes = 0;   // held from the driver
  size_t cached_bytes = 0;     // of reserved: free blocks the next request may take
  size_t peak_allocated_bytes = 0;
  size_t peak_reserved_bytes = 0;
  uint64_t device_mallocs = 0;  // cudaMalloc calls so far
  uint64_t device_frees = 0;
};
MemoryStats memory_stats(int index = -1);
// Starts the peaks again from the bytes allocated and reserved now (as PyTorch's
// torch.cuda.reset_peak_memory_stats), so a peak can be measured per phase.
void reset_peak_memory_stats(int index = -1);
void empty_cache();  // give every cached, unused block back to the driver
// Allocation: a request the device cannot serve first gives the cached blocks back and
// retries; if it still fails it throws tensor::Error naming the request, the device, its
// free and total memory and the allocator's reserved, in-tensor and cached bytes.
void* allocate(size_t nbytes, int index);
void deallocate(void* ptr, int index);
// Frees as deallocate does, but gives the block back to the driver instead of the cache (once
// the device's stream has drained): for large one-off buffers, such as an algorithm search's
// trial workspaces, that should not stay reserved. A block of a CUDA graph's pool, or one
// freed while a graph is captured, stays the graph's as with deallocate. Never throws.
void release(void* ptr, int index);

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

// Note [CUDA graphs]
// Graph::capture(work) runs `work` once while CUDA records, instead of running, everything it
// enqueues on the device's stream (all of the library's work goes there: Note [One stream
// per device]); replay() then launches the recorded work again with one call, which removes
// the host's per-kernel launch cost (PyTorch's torch.cuda.graph). What a capture needs:
//   - no host synchronisation inside `work`: a value read to the host (a criterion's loss,
//     item()), synchronize() or a copy to host memory fails the capture, with an error;
//   - warm-up first: run `work` eagerly a few times, so algorithm searches, plan builds,
//     workspaces and buffers happen outside the capture;
//   - static tensors: replay reads and writes the addresses the capture saw, so inputs are
//     refreshed in place (x.copy_(batch)) and every tensor the work uses stays alive.
//   - nothing whose state advances on the host: nn::Adam's step count refuses a capture (build
//     it with capturable: Note [Capturable Adam] in nn/Adam.h). Random fills (dropout masks) are fine: see
//     Note [Random fills in CUDA graphs] below.
// Memory allocated while capturing comes from a pool private to the graph, and a block freed
// while capturing joins that pool too: the graph's addresses are never handed to other
// tensors while it lives. Destroying the graph gives its pool back to the caching allocator.
// Before instantiating, small memset nodes (cuDNN's counters) become kernel nodes, which
// replay faster (Note [Memset nodes in CUDA graphs] in tensor/cuda/GraphMemsets.cu).
// One capture at a time per device, from one thread; no other thread may use the device
// meanwhile.
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Captures `work` on device `index` (-1: the current one). Throws tensor::Error naming the
  // device and what went wrong; the device stays usable and nothing is kept.
  static Graph capture(const std::function<void()>& work, int index = -1);
  void replay() const;  // enqueues the recorded work on the device's stream
  bool defined() const { return exec_ != nullptr; }
  size_t nodes() const;  // the recorded operations (kernels, copies, memsets)
  int device() const { return device_; }

  // Whether a capture is under way on device `index` (-1: the current one); false without CUDA
  // or without a visible device.
  static bool capturing(int index = -1);

  // Note [Random fills in CUDA graphs]
  // A fill captured in a graph cannot take its Philox seed and offset as launch arguments:
  // every replay would draw the same numbers. It reads them from two device words instead,
  // which replay() sets from the generator just before each launch, advancing the generator
  // by the draws the capture made, as PyTorch's graph-safe generators do. So a replay draws
  // exactly what the same work run eagerly would draw from the generator's state at that
  // moment, the capture itself draws nothing (the generator does not advance), and a reseed
  // between replays takes effect. The generators a capture draws from must outlive the graph.
  // For a fill of n draws on `index` while a capture is under way there: the state words to
  // read and, in `relative`, the fill's first draw among the capture's draws from `gen`;
  // nullptr (the fill runs as usual) when no capture is under way on `index`.
  static const uint64_t* random_state_for_capture(int index, Generator& gen, uint64_t n, uint64_t& relative);
  // The draws the capture under way on `index` has made from `gen` so far (0 before its first,
  // and when no capture is under way), and setting them back, so that work captured again draws
  // what it drew the first time: a checkpointed block's recompute in backward
  // (nn/DecoderBlock.cpp). set_capture_draws throws unless a capture is under way on `index`.
  static uint64_t capture_draws(int index, const Generator& gen);
  static void set_capture_draws(int index, const Generator& gen, uint64_t draws);

  struct RandomBinding {  // one generator a capture drew from
    Generator* gen;
    uint64_t* state;  // {seed, base} on the device, in the graph's pool
    uint64_t draws;   // how many counters one replay consumes
  };

 private:
  void reset() noexcept;
  std::vector<RandomBinding> random_;
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
  int device_ = -1;
  uint64_t pool_ = 0;  // the private memory pool's id
};

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
