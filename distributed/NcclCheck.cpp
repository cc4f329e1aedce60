// NcclCheck.cpp
#include "distributed/NcclCheck.h"

#include <string>

#include "tensor/DType.h"

namespace dist::detail {

void throw_nccl_error(ncclResult_t status, ncclComm_t comm, const char* call, const char* file, int line) {
  std::string msg = ::tensor::detail::concat(call, " failed at ", file, ":", line, ": ", ncclGetErrorString(status));
  const char* last = ncclGetLastError(comm);
  if (last && last[0]) msg += std::string(" (") + last + ")";
  throw tensor::Error(msg);
}

ncclDataType_t nccl_type(tensor::DType t) {
  switch (t) {
    case tensor::DType::Float32:
      return ncclFloat32;
    case tensor::DType::Float64:
      return ncclFloat64;
    case tensor::DType::Float16:
      return ncclFloat16;
    case tensor::DType::BFloat16:
      return ncclBfloat16;
    case tensor::DType::Int64:
      return ncclInt64;
    case tensor::DType::UInt8:
      return ncclUint8;
  }
  throw tensor::Error("dist: no NCCL type for dtype " + std::to_string(static_cast<int>(t)));
}

}  // namespace dist::detail
