// NcclCheck.cpp
#include "cudnn/dist/NcclCheck.h"

#include <string>

#include "tensor/DType.h"

namespace cudnn::dist::detail {

void throw_nccl_error(ncclResult_t status, ncclComm_t comm, const char* call, const char* file, int line) {
  std::string msg = ::tensor::detail::concat(call, " failed at ", file, ":", line, ": ", ncclGetErrorString(status));
  const char* last = ncclGetLastError(comm);
  if (last && last[0]) msg += std::string(" (") + last + ")";
  throw tensor::Error(msg);
}

}  // namespace cudnn::dist::detail
