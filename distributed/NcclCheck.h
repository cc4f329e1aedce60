// NcclCheck.h: every NCCL status becomes a tensor::Error naming the call, the place, NCCL's
// description of the status and its last detailed message (as cudnn/core/Check.h does for cuDNN).
// Internal to distributed/ (the NCCL backend and DataParallelTable): no public header names an NCCL type
// (Note [NCCL flags stay local] in meson.build).
#pragma once

#include <nccl.h>

#include "tensor/DType.h"

namespace dist::detail {

// NCCL's name for a tensor dtype (every dtype has one).
ncclDataType_t nccl_type(tensor::DType t);

[[noreturn]] void throw_nccl_error(ncclResult_t status, ncclComm_t comm, const char* call, const char* file, int line);

}  // namespace dist::detail

// ncclInProgress is not an error: a non-blocking communicator (ProcessGroup) settles it.
#define NCCL_CHECK_COMM(comm, call)                                                            \
  do {                                                                                         \
    const ncclResult_t nccl_check_status_ = (call);                                            \
    if (nccl_check_status_ != ncclSuccess && nccl_check_status_ != ncclInProgress) {           \
      ::dist::detail::throw_nccl_error(nccl_check_status_, (comm), #call, __FILE__, __LINE__); \
    }                                                                                          \
  } while (0)

#define NCCL_CHECK(call) NCCL_CHECK_COMM(nullptr, call)
