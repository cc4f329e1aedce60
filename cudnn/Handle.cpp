// Handle.cpp
#include "cudnn/Handle.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "cudnn/Check.h"
#include "cudnn/Config.h"
#include "tensor/Cuda.h"

namespace cudnn {

namespace {

struct PerDevice {
  cudnnHandle_t dnn = nullptr;
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int device = 0;
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

PerDevice& current() {
  thread_local std::vector<PerDevice*> devices;  // leaked on purpose: see Handle.h
  const int dev = tensor::cuda::current_device();
  if (static_cast<int>(devices.size()) <= dev) devices.resize(static_cast<size_t>(dev) + 1, nullptr);
  if (!devices[dev]) {
    check_runtime_version();
    auto* d = new PerDevice;
    d->device = dev;
    CUDNN_CHECK(cudnnCreate(&d->dnn));
    CUDNN_CHECK(cudnnSetStream(d->dnn, static_cast<cudaStream_t>(tensor::cuda::stream(dev))));
    CUBLAS_CHECK(cublasCreate(&d->blas));
    CUBLAS_CHECK(cublasSetStream(d->blas, static_cast<cudaStream_t>(tensor::cuda::stream(dev))));
    devices[dev] = d;
  }
  return *devices[dev];
}

}  // namespace

cudnnHandle_t handle() { return current().dnn; }
cublasHandle_t blas_handle() { return current().blas; }
cudaStream_t stream() { return static_cast<cudaStream_t>(tensor::cuda::stream(-1)); }

void* workspace(size_t bytes) {
  PerDevice& d = current();
  if (bytes <= d.workspace_bytes) return d.workspace;
  // Blocks are stream-ordered (one stream per device), so the old one may go back now.
  if (d.workspace) tensor::cuda::deallocate(d.workspace, d.device);
  d.workspace = nullptr;
  d.workspace_bytes = 0;
  d.workspace = tensor::cuda::allocate(bytes, d.device);
  d.workspace_bytes = bytes;
  return d.workspace;
}

size_t workspace_size() { return current().workspace_bytes; }

size_t workspace_available() {
  size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const auto stats = tensor::cuda::memory_stats();
  const size_t cached_unused = stats.reserved_bytes - std::min(stats.reserved_bytes, stats.allocated_bytes);
  const size_t margin = std::max<size_t>(total / 20, size_t(256) << 20);
  const size_t usable = free_bytes + cached_unused;
  return (usable > margin ? usable - margin : 0) + current().workspace_bytes;
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
