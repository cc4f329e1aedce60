// Handle.h: the cuDNN and cuBLAS handles and the convolution workspace.
// One cuDNN and one cuBLAS handle per device and thread, created lazily on the device's
// stream (Note [One stream per device] in tensor/Cuda.h). They are not owned by statics or
// by layers: tensor::cuda::shutdown() and the exit hook destroy them through a shutdown
// hook this layer registers (Note [CUDA teardown] in tensor/Cuda.h), never a static
// destructor. Each handle has one workspace that grows on demand, capped by the
// workspace_limit flag, carved from the caching allocator.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

namespace cudnn {

cudnnHandle_t handle();        // current device, this thread
cublasHandle_t blas_handle();  // current device, this thread
cudaStream_t stream();         // the current device's stream
// A number no other handle of this process has or had: what was built with handle() (a
// graph-API execution plan) is reused only while this stays the same (a shutdown makes new
// handles, and an address may come back).
uint64_t handle_serial();

// A workspace of at least `bytes` for the current handle. Throws tensor::Error when the
// memory cannot be had (the caller then tries a cheaper algorithm).
void* workspace(size_t bytes);
size_t workspace_size();

// Bytes a new workspace may take now: the device's free memory plus what the caching
// allocator holds unused, less a safety margin (and within tensor::cuda::set_memory_limit),
// plus the workspace already held.
size_t workspace_available();

// cuDNN versions: the headers this was built with, and the library loaded at run time.
// The first handle checks that the library's major version is not older than the build's.
int build_version();
int runtime_version();
const char* version_string();  // "built with cuDNN 9.19.0, running 9.14.0"

}  // namespace cudnn
