// Backend.h: what a ProcessGroup asks of a communication library. Two implement it: NCCL for
// CUDA tensors (NcclBackend.h) and MPI for CPU tensors (MpiBackend.h); the group picks one by
// the tensors' device. Collectives work in place on contiguous buffers of the backend's
// device and are enqueued: wait() completes what was enqueued so far (NCCL: on a stream; MPI:
// the outstanding non-blocking requests). Every wait is bounded by the group's timeout and
// watches the rendezvous for a lost rank (Note [Failure is not a hang] in NcclBackend.h).
#pragma once

#include <cstdint>
#include <string>

#include "tensor/Tensor.h"

namespace dist {

enum class ReduceOp { Sum, Avg, Max, Min };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;       // "NCCL", "MPI"
  virtual tensor::Device device() const = 0;  // where its buffers live
  // `stream`: a cudaStream_t for NCCL (nullptr: the device's stream); ignored by MPI.
  virtual void allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void* stream) = 0;
  virtual void broadcast(void* data, int64_t count, tensor::DType dtype, int root, void* stream) = 0;
  // Equal chunks (ShardedDataParallel's shards). reduceScatter: `send` holds worldSize chunks of
  // `count` elements; rank r receives in `recv` (`count` elements) the reduction (Sum or Avg)
  // of every rank's chunk r. allGather: `send` holds `count` elements; `recv` (worldSize chunks
  // of `count`) receives rank r's in chunk r, on every rank; in place when `send` is `recv`'s
  // own chunk (recv + rank * count). Both are enqueued like the others: `send` and `recv` stay
  // alive and untouched until wait() (MPI) or the stream's order (NCCL) completes them.
  virtual void reduceScatter(const void* send, void* recv, int64_t count, tensor::DType dtype, ReduceOp op,
                             void* stream) = 0;
  virtual void allGather(const void* send, void* recv, int64_t count, tensor::DType dtype, void* stream) = 0;
  virtual void groupStart() {}
  virtual void groupEnd() {}
  // Completes the work enqueued so far (on `stream` for NCCL) within the timeout; `what` names it.
  virtual void wait(void* stream, const std::string& what) = 0;
  // Throws tensor::Error if the backend was aborted, naming `method` and why.
  virtual void check(const char* method) const = 0;
  virtual void abort(const std::string& reason) noexcept = 0;
  virtual bool aborted() const = 0;
  virtual void close() noexcept = 0;
};

}  // namespace dist
