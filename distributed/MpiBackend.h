// MpiBackend.h: the backend for CPU tensors (Backend.h), over MPI_COMM_WORLD of a job started
// by mpirun (Open MPI). Collectives start non-blocking MPI operations (MPI_Iallreduce,
// MPI_Ibcast, MPI_Ireduce_scatter_block, MPI_Iallgather) on contiguous CPU buffers; wait()
// completes them, polling MPI, the rendezvous (a rank that exited or aborted) and the timeout,
// so a killed or hung rank is an error on the others, not a hang (Note [Failure is not a hang]
// in NcclBackend.h). ReduceOp::Avg is a sum divided by the world size when the operation
// completes. MPI has no 16-bit float types: reductions take float32, float64, int64 and uint8;
// broadcasts and all-gathers take every dtype.
// MPI is initialised once per process (MPI_Init_thread, serialized) and finalised at exit
// unless an operation was abandoned (a lost rank): MPI_Finalize would wait for it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/Backend.h"
#include "distributed/Environment.h"

namespace dist {

class Rendezvous;

class MpiBackend : public Backend {
 public:
  // Over MPI_COMM_WORLD, which must match `world` (rank and size: start the job with mpirun).
  static std::shared_ptr<MpiBackend> create(const WorldInfo& world, double timeoutSeconds,
                                            std::shared_ptr<Rendezvous> rendezvous);
  ~MpiBackend() override;
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  const char* name() const override { return "MPI"; }
  tensor::Device device() const override { return tensor::Device::cpu(); }
  void allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void* stream) override;
  void broadcast(void* data, int64_t count, tensor::DType dtype, int root, void* stream) override;
  void reduceScatter(const void* send, void* recv, int64_t count, tensor::DType dtype, ReduceOp op,
                     void* stream) override;
  void allGather(const void* send, void* recv, int64_t count, tensor::DType dtype, void* stream) override;
  void wait(void* stream, const std::string& what) override;
  void check(const char* method) const override;
  void abort(const std::string& reason) noexcept override;
  bool aborted() const override;
  void close() noexcept override;
  size_t pending() const;  // operations started and not completed by wait()

 private:
  struct Op;
  MpiBackend() = default;
  [[noreturn]] void fail(const std::string& why);

  WorldInfo world_;
  double timeout_ = 300;
  std::shared_ptr<Rendezvous> rendezvous_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::string abortReason_;
  std::string where_;
  mutable std::mutex mutex_;
};

}  // namespace dist
