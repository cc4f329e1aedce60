// NcclCheck.cpp
#include "distributed/NcclCheck.h"

#include <string>
#include <utility>

#include "tensor/DType.h"
#include "tensor/EnumTable.h"

namespace dist::detail {

void throw_nccl_error(ncclResult_t status, ncclComm_t comm, const char* call, const char* file, int line) {
  std::string msg = ::tensor::detail::concat(call, " failed at ", file, ":", line, ": ", ncclGetErrorString(status));
  const char* last = ncclGetLastError(comm);
  if (last && last[0]) msg += std::string(" (") + last + ")";
  throw tensor::Error(msg);
}

namespace {
using tensor::DType;
constexpr std::pair<DType, ncclDataType_t> kNcclTypes[] = {
    {DType::Float32, ncclFloat32},   {DType::Float64, ncclFloat64}, {DType::Float16, ncclFloat16},
    {DType::BFloat16, ncclBfloat16}, {DType::Int64, ncclInt64},     {DType::UInt8, ncclUint8},
};
}  // namespace

ncclDataType_t nccl_type(tensor::DType t) {
  if (const auto type = tensor::lookup(kNcclTypes, t)) return *type;
  throw tensor::Error("dist: no NCCL type for dtype " + std::to_string(static_cast<int>(t)));
}

}  // namespace dist::detail
