// Handle.h: the cuDNN and cuBLAS handles and the workspaces of cuDNN's calls.
// One cuDNN, one cuBLAS and one cuBLASLt handle per device and thread, created lazily, the
// first two on the device's stream (Note [One stream per device] in tensor/Cuda.h; cuBLASLt
// takes the stream per call). They are not owned by statics or
// by layers: tensor::cuda::shutdown() and the exit hook destroy them through a shutdown
// hook this layer registers (Note [CUDA teardown] in tensor/Cuda.h), never a static
// destructor. Workspaces are leased per call from the caching allocator (Note [Workspaces]).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

namespace cudnn {

cudnnHandle_t handle();        // current device, this thread
cublasHandle_t blas_handle();  // current device, this thread
cublasLtHandle_t blas_lt_handle();  // current device, this thread (cuBLASLt's epilogues)
cudaStream_t stream();         // the current device's stream
// A number no other handle of this process has or had: what was built with handle() (a
// graph-API execution plan) is reused only while this stays the same (a shutdown makes new
// handles, and an address may come back).
uint64_t handle_serial();

// Note [Workspaces]
// A cuDNN call's workspace is a lease: a Workspace holds exactly the bytes the chosen engine
// asks for, from the caching allocator on the current device, and gives them back when it goes
// out of scope, right after the call is enqueued, so the next operation can reuse them (as
// PyTorch allocates each call's workspace). Nothing is held between calls: a handle used to keep
// one workspace grown to the largest size ever tried, up to workspace_limit (4 GiB), for the life
// of the process. Giving a block back while the call still runs is safe: the allocator is
// stream-ordered and all work on a device runs on its one stream (Note [One stream per device]
// in tensor/Cuda.h), so whatever reuses the block runs after the call. Under CUDA-graph capture
// the lease comes from the graph's private pool and goes back to it (Note [CUDA graphs]): the
// captured call's workspace stays the graph's for as long as the graph lives, and no eager
// tensor is ever handed its address.
// Algorithm searches lease with Use::Search: their trial workspaces (within the trial cap, Note
// [Trial workspaces] in cudnn/ops/conv_search.cpp) go back to the driver, not the cache, when
// the lease ends, so a search's peak does not stay reserved.
class Workspace {
 public:
  enum class Use { Call, Search };
  Workspace() = default;
  // At least `bytes` on the current device (none, a null pointer, for 0). Throws tensor::Error
  // when the memory cannot be had (the caller then tries a cheaper algorithm).
  explicit Workspace(size_t bytes, Use use = Use::Call);
  ~Workspace() { reset(); }
  Workspace(Workspace&& other) noexcept;
  Workspace& operator=(Workspace&& other) noexcept;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  // At least `bytes`: the lease keeps its block when large enough, else gives it back and
  // takes a larger one (a search timing candidates one after another). Throws as the constructor.
  void* grow(size_t bytes);
  void reset() noexcept;  // gives the block back now

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
  Use use_ = Use::Call;
};

// Bytes a new workspace may take now: the device's free memory plus the caching allocator's
// cached blocks, less a safety margin (and within tensor::cuda::set_memory_limit).
size_t workspace_available();

// cuDNN versions: the headers this was built with, and the library loaded at run time.
// The first handle checks that the library's major version is not older than the build's.
int build_version();
int runtime_version();
const char* version_string();  // "built with cuDNN 9.19.0, running 9.14.0"

}  // namespace cudnn
