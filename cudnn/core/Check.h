// Check.h: every cuDNN and cuBLAS status becomes a tensor::Error naming the call, the place
// and the library's own description (and cuDNN's last detailed message when it has one).
// CUDA runtime statuses use CUDA_CHECK from tensor/cuda/CudaCheck.h.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "tensor/DType.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::detail {

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
const char* cublas_status_name(cublasStatus_t status);

}  // namespace cudnn::detail

#define CUDNN_CHECK(call)                                                                   \
  do {                                                                                      \
    const cudnnStatus_t cudnn_check_status_ = (call);                                       \
    if (cudnn_check_status_ != CUDNN_STATUS_SUCCESS) {                                      \
      ::cudnn::detail::throw_cudnn_error(cudnn_check_status_, #call, __FILE__, __LINE__);   \
    }                                                                                       \
  } while (0)

#define CUBLAS_CHECK(call)                                                                  \
  do {                                                                                      \
    const cublasStatus_t cublas_check_status_ = (call);                                     \
    if (cublas_check_status_ != CUBLAS_STATUS_SUCCESS) {                                    \
      ::cudnn::detail::throw_cublas_error(cublas_check_status_, #call, __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)
