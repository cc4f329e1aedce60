// Handle.cpp
#include "cudnn/core/Handle.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cudnn/core/Check.h"
#include "cudnn/core/Config.h"
#include "tensor/Cuda.h"

namespace cudnn {

namespace {

// Note [cuBLAS's workspace]
// Without a workspace of its own, cuBLAS allocates one itself, and under stream capture it
// does so with stream-ordered allocations: a captured step holding a cuBLAS call then had
// allocation nodes, which keep its memset nodes from becoming kernel nodes (Note [Memset nodes
// in CUDA graphs] in tensor/cuda/GraphMemsets.cu). So each handle gets one from the caching
// allocator at its first product, of the size cuBLAS's documentation advises for Hopper (32
// MiB, as PyTorch's default there), counted with the tensors as PyTorch counts its own. A first
// product made while capturing leaves cuBLAS its own: the block would belong to that graph.
constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;

struct PerDevice {
  cudnnHandle_t dnn = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;   // made at its first use
  void* blas_workspace = nullptr;  // Note [cuBLAS's workspace]
  int device = 0;
  uint64_t serial = 0;  // unique per handle ever made: handle_serial()
};

void check_runtime_version() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (config().enabled == Enabled::NoCheck) return;
    const int runtime_major = runtime_version() / 10000;
    const int build_major = CUDNN_MAJOR;
    if (runtime_major < build_major) {
      throw tensor::Error(std::string("cudnn: the cuDNN library loaded at run time is older than the one "
                                      "cudnn-nn was built with (") + version_string() +
                          "); install cuDNN " + std::to_string(build_major) + " or rebuild");
    }
  });
}

// Every PerDevice of every thread, so that release_handles reaches them all. A thread's
// own table is valid while its generation is the registry's: release_handles destroys the
// handles and starts a new generation, after which each thread makes new ones on demand.
struct Registry {
  std::mutex mutex;
  std::vector<PerDevice*> all;
  uint64_t generation = 1;
  static Registry& get() {
    static Registry* r = new Registry();  // leaked: see Note [CUDA teardown] in tensor/Cuda.h
    return *r;
  }
};

void ignore(cudnnStatus_t) {}
void ignore(cublasStatus_t) {}

// The shutdown hook (tensor::cuda::shutdown and the exit hook): destroys every thread's
// handles. Statuses are ignored: at exit the runtime may be going away. Never throws.
void release_handles() {
  Registry& r = Registry::get();
  std::lock_guard<std::mutex> lock(r.mutex);
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) {
    cudaGetLastError();
    previous = -1;
  }
  for (PerDevice* d : r.all) {
    if (cudaSetDevice(d->device) != cudaSuccess) cudaGetLastError();
    if (d->dnn) ignore(cudnnDestroy(d->dnn));
    if (d->blas) ignore(cublasDestroy(d->blas));
    if (d->lt) ignore(cublasLtDestroy(d->lt));
    if (d->blas_workspace) {
      try {
        tensor::cuda::deallocate(d->blas_workspace, d->device);
      } catch (...) {  // at a late exit: the driver takes the memory back
      }
    }
    delete d;
  }
  r.all.clear();
  ++r.generation;
  if (previous >= 0 && cudaSetDevice(previous) != cudaSuccess) cudaGetLastError();
}

PerDevice& current() {
  struct Table {
    uint64_t generation = 0;
    std::vector<PerDevice*> devices;  // owned by the registry
  };
  thread_local Table table;
  Registry& r = Registry::get();
  const int dev = tensor::cuda::current_device();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (table.generation != r.generation) {
      table.devices.clear();  // released by a shutdown
      table.generation = r.generation;
    }
  }
  if (static_cast<int>(table.devices.size()) <= dev) table.devices.resize(static_cast<size_t>(dev) + 1, nullptr);
  if (!table.devices[dev]) {
    check_runtime_version();
    static std::atomic<uint64_t> next_serial{1};
    auto d = std::make_unique<PerDevice>();
    d->device = dev;
    d->serial = next_serial++;
    const auto s = static_cast<cudaStream_t>(tensor::cuda::stream(dev));
    CUDNN_CHECK(cudnnCreate(&d->dnn));
    try {
      CUDNN_CHECK(cudnnSetStream(d->dnn, s));
      CUBLAS_CHECK(cublasCreate(&d->blas));
      CUBLAS_CHECK(cublasSetStream(d->blas, s));
    } catch (...) {
      if (d->blas) ignore(cublasDestroy(d->blas));
      ignore(cudnnDestroy(d->dnn));
      throw;
    }
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.all.push_back(d.get());
    }
    tensor::cuda::register_shutdown_hook(&release_handles);  // after CUDA and the handles are up
    table.devices[dev] = d.release();
  }
  return *table.devices[dev];
}

}  // namespace

cudnnHandle_t handle() { return current().dnn; }
uint64_t handle_serial() { return current().serial; }
cublasHandle_t blas_handle() {
  PerDevice& d = current();
  if (!d.blas_workspace && !tensor::cuda::Graph::capturing(d.device)) {  // Note [cuBLAS's workspace]
    void* w = tensor::cuda::allocate(kBlasWorkspaceBytes, d.device);
    const cublasStatus_t st = cublasSetWorkspace(d.blas, w, kBlasWorkspaceBytes);
    if (st != CUBLAS_STATUS_SUCCESS) tensor::cuda::deallocate(w, d.device);
    CUBLAS_CHECK(st);
    d.blas_workspace = w;
  }
  return d.blas;
}
cublasLtHandle_t blas_lt_handle() {
  PerDevice& d = current();
  if (!d.lt) CUBLAS_CHECK(cublasLtCreate(&d.lt));
  return d.lt;
}
cudaStream_t stream() { return static_cast<cudaStream_t>(tensor::cuda::stream(-1)); }

Workspace::Workspace(size_t bytes, Use use) : use_(use) { grow(bytes); }

Workspace::Workspace(Workspace&& other) noexcept
    : data_(other.data_), bytes_(other.bytes_), device_(other.device_), use_(other.use_) {
  other.data_ = nullptr;
  other.bytes_ = 0;
}

Workspace& Workspace::operator=(Workspace&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    bytes_ = other.bytes_;
    device_ = other.device_;
    use_ = other.use_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void* Workspace::grow(size_t bytes) {
  if (bytes <= bytes_) return data_;  // 0 bytes: none, a null pointer
  reset();                            // before the larger one: the two are never held at once
  if (bytes == 0) return nullptr;
  device_ = tensor::cuda::current_device();
  data_ = tensor::cuda::allocate(bytes, device_);  // throws tensor::Error when it cannot
  bytes_ = bytes;
  return data_;
}

void Workspace::reset() noexcept {
  if (data_) {
    // stream-ordered: the calls enqueued with it run before anything that reuses it
    if (use_ == Use::Search)
      tensor::cuda::release(data_, device_);
    else
      tensor::cuda::deallocate(data_, device_);
  }
  data_ = nullptr;
  bytes_ = 0;
}

size_t workspace_available() {
  size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const auto stats = tensor::cuda::memory_stats();
  const size_t margin = std::max<size_t>(total / 20, size_t(256) << 20);
  const size_t usable = free_bytes + stats.cached_bytes;
  size_t room = usable > margin ? usable - margin : 0;
  // under tensor::cuda::set_memory_limit: what the limit leaves beside the tensors
  if (const size_t limit = tensor::cuda::memory_limit()) {
    const size_t held = stats.reserved_bytes - stats.cached_bytes;  // blocks in use
    room = std::min(room, limit > held ? limit - held : 0);
  }
  return room;
}

int build_version() { return CUDNN_VERSION; }
int runtime_version() { return static_cast<int>(cudnnGetVersion()); }

const char* version_string() {
  static const std::string s = [] {
    auto fmt = [](int v) {
      return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
    };
    return "built with cuDNN " + fmt(build_version()) + ", running " + fmt(runtime_version());
  }();
  return s.c_str();
}

}  // namespace cudnn
