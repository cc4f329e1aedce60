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

// What CUDNN_CHECK and CUBLAS_CHECK call: a status other than its library's success throws.
// The overload is the status's own library's, so a call of any other type does not compile.
inline void check_status(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS) throw_cudnn_error(status, call, file, line);
}
inline void check_status(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

}  // namespace cudnn::detail

#define CUDNN_CHECK(call) ::cudnn::detail::check_status((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) ::cudnn::detail::check_status((call), #call, __FILE__, __LINE__)
