// Check.cpp
#include "cudnn/core/Check.h"

namespace cudnn::detail {

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string msg = ::tensor::detail::concat(call, " failed at ", file, ":", line, ": ",
                                             cudnnGetErrorString(status));
  if (detail[0]) msg += std::string(" (") + detail + ")";
  throw tensor::Error(msg);
}

const char* cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw tensor::Error(::tensor::detail::concat(call, " failed at ", file, ":", line, ": ",
                                               cublas_status_name(status)));
}

}  // namespace cudnn::detail
