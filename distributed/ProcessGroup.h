// ProcessGroup.h: the ranks of a job and the backends that move their tensors (Backend.h):
// NCCL for CUDA tensors, MPI for CPU tensors, chosen by each tensor's device. create() meets
// the other ranks (Rendezvous on MASTER_ADDR:MASTER_PORT: rank 0 hands out the NCCL unique id,
// and the connections stay open to see a rank that exits), then creates
//   - the NCCL backend where it is built and rank 0 has a GPU for its LOCAL_RANK (then every
//     rank needs one: one GPU per rank), on cuda:localRank;
//   - the MPI backend where it is built and the job was started by mpirun; a job of one process
//     without mpirun has a trivial CPU backend instead (every collective is the identity).
// A collective on a device without its backend throws, naming what is missing. Every wait is
// bounded by the timeout; a failure aborts every backend and tells the other ranks (Note
// [Failure is not a hang] in NcclBackend.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "distributed/Backend.h"
#include "distributed/Environment.h"
#include "tensor/Tensor.h"

namespace dist {

class Rendezvous;

class ProcessGroup {
 public:
  static std::shared_ptr<ProcessGroup> create(const WorldInfo& world,
                                              double timeoutSeconds = timeout_from_environment());
  ~ProcessGroup();  // closes the backends; never throws
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return world_.rank; }
  int worldSize() const { return world_.worldSize; }
  const WorldInfo& world() const { return world_; }
  double timeout() const { return timeout_; }
  // This rank's device for its tensors: cuda:localRank with the NCCL backend, else the CPU.
  tensor::Device device() const;
  // The backend for tensors on `d` (its type: CUDA or CPU), nullptr when there is none.
  Backend* backend(const tensor::Device& d) const;
  std::string backends() const;  // "NCCL, MPI", "MPI", "NCCL, self" (one process), ...

  // In place over all ranks, on the backend of the tensor's device; enqueued (`stream`: a
  // cudaStream_t for NCCL, nullptr the device's stream): wait() completes it.
  void allReduce(tensor::Tensor& t, ReduceOp op = ReduceOp::Sum, void* stream = nullptr);
  // Raw buffers on device() (DistributedDataParallel's buckets).
  void allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void* stream);
  void broadcast(tensor::Tensor& t, int root = 0, void* stream = nullptr);
  // Equal chunks (Backend.h; Note [Equal chunks] in the .cpp), enqueued like allReduce.
  // reduceScatter: `input` is worldSize chunks of output.numel() elements; this rank's `output`
  // gets the Sum or Avg of every rank's chunk rank(). allGather: `output` (worldSize chunks of
  // input.numel()) gets every rank's `input`; `input` may be output's own chunk (in place).
  void reduceScatter(const tensor::Tensor& input, tensor::Tensor& output, ReduceOp op = ReduceOp::Sum,
                     void* stream = nullptr);
  void allGather(const tensor::Tensor& input, tensor::Tensor& output, void* stream = nullptr);
  // Raw buffers on device(): `count` elements per chunk.
  void reduceScatter(const void* send, void* recv, int64_t count, tensor::DType dtype, ReduceOp op, void* stream);
  void allGather(const void* send, void* recv, int64_t count, tensor::DType dtype, void* stream);
  // Brackets several collectives of device()'s backend into one launch (NCCL's groups).
  void groupStart();
  void groupEnd();
  // Completes the work enqueued so far on device()'s backend (`stream` for NCCL), or on
  // `where`'s, within the timeout; `what` names the wait in the error.
  void wait(void* stream, const std::string& what);
  void wait(const tensor::Device& where, const std::string& what);

  // NCCL only (throw without it): the group's communication stream, and watch() (the host does
  // not wait; see NcclBackend.h).
  void* commStream();
  void* watch(void* stream, const std::string& what);

  void check(const char* method) const;
  void close() noexcept;
  // Every rank waits for every other (host side, over the rendezvous connections).
  void barrier();
  void abort(const std::string& reason) noexcept;
  bool aborted() const;
  [[noreturn]] void fail(const std::string& why);

 private:
  ProcessGroup() = default;
  Backend& need(const tensor::Device& d, const char* method) const;
  void checkChunks(const tensor::Tensor& whole, const tensor::Tensor& chunk, const char* method) const;

  WorldInfo world_;
  double timeout_ = 300;
  std::string where_;
  std::shared_ptr<Rendezvous> rendezvous_;
  std::shared_ptr<Backend> nccl_;  // a NcclBackend
  std::shared_ptr<Backend> mpi_;   // CPU tensors: a MpiBackend, or the one-process backend
  std::string ncclWhyNot_, mpiWhyNot_;
  std::mutex barrierMutex_;
};

}  // namespace dist
