// CudaCheck.h: turns a failed CUDA runtime status into a tensor::Error that names the call,
// where it was made and CUDA's own description. Internal to tensor/cuda/.
#pragma once

#include <cuda_runtime_api.h>

#include "tensor/DType.h"

namespace tensor::cuda::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                          int line) {
  throw Error(::tensor::detail::concat(call, " failed at ", file, ":", line, ": ",
                                       cudaGetErrorName(status), " (", cudaGetErrorString(status),
                                       ")"));
}

}  // namespace tensor::cuda::detail

#define CUDA_CHECK(call)                                                               \
  do {                                                                                 \
    const cudaError_t cuda_check_status_ = (call);                                     \
    if (cuda_check_status_ != cudaSuccess) {                                           \
      ::tensor::cuda::detail::throw_cuda_error(cuda_check_status_, #call, __FILE__, __LINE__); \
    }                                                                                  \
  } while (0)

// After a kernel launch: reports bad configurations and earlier asynchronous faults.
#define CUDA_CHECK_LAUNCH(kernel_name)                                                 \
  do {                                                                                 \
    const cudaError_t cuda_check_status_ = cudaGetLastError();                         \
    if (cuda_check_status_ != cudaSuccess) {                                           \
      ::tensor::cuda::detail::throw_cuda_error(cuda_check_status_, "launch of " kernel_name, \
                                               __FILE__, __LINE__);                    \
    }                                                                                  \
  } while (0)
