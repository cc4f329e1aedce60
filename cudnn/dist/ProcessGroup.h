// ProcessGroup.h: one NCCL communicator over the ranks of a job, one GPU per rank. create()
// meets the other ranks (Rendezvous: rank 0's NCCL unique id to all), then builds a
// non-blocking communicator on cuda:localRank. Collectives take contiguous CUDA tensors of
// this rank's device, in place, enqueued on a stream (the device's compute stream by default).
// Note [Failure is not a hang]: every host wait (communicator creation, wait(), barrier())
// polls NCCL's asynchronous error state, the rendezvous connections (a rank that exited or
// aborted) and a deadline (CUDNN_NN_DIST_TIMEOUT, default 300 s); on any of them the
// communicator is aborted (ncclCommAbort, which releases kernels stuck in a collective), the
// other ranks are told why, and tensor::Error names what happened. Later calls throw too.
#pragma once

#include <memory>
#include <string>

#include "cudnn/dist/Environment.h"
#include "tensor/Tensor.h"

struct ncclComm;  // nccl.h's communicator (ncclComm_t is ncclComm*); no NCCL header here

namespace cudnn::dist {

class Rendezvous;

enum class ReduceOp { Sum, Avg, Max, Min };

class ProcessGroup {
 public:
  // Meets the ranks of `world` and creates the communicator on cuda:world.localRank, within
  // `timeoutSeconds` for each blocking step.
  static std::shared_ptr<ProcessGroup> create(const WorldInfo& world,
                                              double timeoutSeconds = timeout_from_environment());
  ~ProcessGroup();  // finalizes (bounded by the timeout, else aborts); never throws
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return world_.rank; }
  int worldSize() const { return world_.worldSize; }
  const WorldInfo& world() const { return world_; }
  tensor::Device device() const { return tensor::Device::cuda(world_.localRank); }
  double timeout() const { return timeout_; }

  // In place over all ranks; `stream` is a cudaStream_t (nullptr: the device's stream).
  // Enqueued only: the stream's order, or wait(), completes it.
  void allReduce(tensor::Tensor& t, ReduceOp op = ReduceOp::Sum, void* stream = nullptr);
  void allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void* stream);
  void broadcast(tensor::Tensor& t, int root = 0, void* stream = nullptr);
  // Brackets several collectives into one launch (ncclGroupStart/End).
  void groupStart();
  void groupEnd();

  // The group's communication stream (a cudaStream_t), made on first use.
  void* commStream();
  // The host waits until the work enqueued on `stream` so far is done, within the timeout
  // (Note [Failure is not a hang]). `what` names the wait in the error.
  void wait(void* stream, const std::string& what);
  // Every rank waits for every other (host side, over the rendezvous connections).
  void barrier();

  // Aborts the communicator and tells the other ranks why. Never throws.
  void abort(const std::string& reason) noexcept;
  bool aborted() const { return !abortReason_.empty(); }
  // abort(why), then throws tensor::Error with `why`.
  [[noreturn]] void fail(const std::string& why);

 private:
  ProcessGroup() = default;
  void checkUsable(const char* method) const;
  void checkTensor(const tensor::Tensor& t, const char* method) const;
  // Waits until the communicator is no longer busy with the last call (ncclInProgress).
  void settle(const std::string& what);
  // "" or why the job cannot go on: an NCCL async error, a lost peer.
  std::string trouble();

  WorldInfo world_;
  double timeout_ = 300;
  ncclComm* comm_ = nullptr;
  void* commStream_ = nullptr;
  void* event_ = nullptr;  // for wait()
  std::unique_ptr<Rendezvous> rendezvous_;
  std::string abortReason_;
  int groupDepth_ = 0;  // open groupStart() calls
  std::string where_;   // "cudnn::dist (rank r of n): "
};

}  // namespace cudnn::dist
