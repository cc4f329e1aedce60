// NcclBackend.h: the backend for CUDA tensors (Backend.h): one NCCL communicator over the
// ranks of a job, one GPU per rank. ProcessGroup meets the other ranks (Rendezvous: rank 0's
// NCCL unique id to all); create() builds a non-blocking communicator on cuda:localRank. Collectives take contiguous
// CUDA tensors of this rank's device, in place, enqueued on a stream (the device's compute stream by default).
// Note [Failure is not a hang]: every host wait (communicator creation, wait(), barrier()) polls NCCL's asynchronous
// error state, the rendezvous connections (a rank that exited or aborted) and a deadline (CUDNN_NN_DIST_TIMEOUT,
// default 300 s); on any of them the communicator is aborted (ncclCommAbort, which releases kernels stuck in a
// collective), the other ranks are told why, and tensor::Error names what happened. Later calls throw too.
// Work the host does not wait for (watch(): DDP's gradient all-reduce, which the compute
// stream waits for on the device) is followed by the group's watchdog thread instead: it polls
// the same three things until the work's event completes, and on a failure or past the
// deadline aborts the same way and records why; the next call on the user's thread throws it.
// Note [Process group teardown]: the destructor, and tensor::cuda::shutdown() (and so exit)
// for every group still alive, stop the watchdog, finalize and destroy the communicator, and
// release the group's events and stream, before the allocator gives its cache back.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distributed/Backend.h"
#include "distributed/Environment.h"
#include "tensor/Tensor.h"

struct ncclComm;  // nccl.h's communicator (ncclComm_t is ncclComm*); no NCCL header here

namespace dist {

class Rendezvous;

class NcclBackend : public Backend {
 public:
  // A new NCCL unique id (rank 0 hands it out through the rendezvous), as bytes.
  static std::string unique_id();
  // This rank's GPU (cuda:localRank) by UUID, for the rendezvous's one-GPU-per-rank check.
  static std::string device_uuid(int device);
  static std::string device_description(int device);  // "GPU-<uuid> (cuda:0, NVIDIA H100)"
  // Creates the communicator on cuda:world.localRank from rank 0's id (already met through
  // `rendezvous`, which it watches for lost ranks), within `timeoutSeconds` for each step.
  static std::shared_ptr<NcclBackend> create(const WorldInfo& world, double timeoutSeconds,
                                             std::shared_ptr<Rendezvous> rendezvous, const std::string& id);
  const char* name() const override { return "NCCL"; }
  ~NcclBackend() override;  // finalizes (bounded by the timeout, else aborts); never throws
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  int rank() const { return world_.rank; }
  int worldSize() const { return world_.worldSize; }
  const WorldInfo& world() const { return world_; }
  tensor::Device device() const override { return tensor::Device::cuda(world_.localRank); }
  double timeout() const { return timeout_; }

  // In place over all ranks; `stream` is a cudaStream_t (nullptr: the device's stream).
  // Enqueued only: the stream's order, or wait(), completes it.
  void allReduce(tensor::Tensor& t, ReduceOp op = ReduceOp::Sum, void* stream = nullptr);
  void allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void* stream) override;
  void broadcast(tensor::Tensor& t, int root = 0, void* stream = nullptr);
  void broadcast(void* data, int64_t count, tensor::DType dtype, int root, void* stream) override;
  // Equal chunks (Backend.h): ncclReduceScatter and ncclAllGather, on `stream` like the others.
  void reduceScatter(const void* send, void* recv, int64_t count, tensor::DType dtype, ReduceOp op,
                     void* stream) override;
  void allGather(const void* send, void* recv, int64_t count, tensor::DType dtype, void* stream) override;
  // Brackets several collectives into one launch (ncclGroupStart/End).
  void groupStart() override;
  void groupEnd() override;

  // The group's communication stream (a cudaStream_t), made on first use.
  void* commStream();
  // The host waits until the work enqueued on `stream` so far is done, within the timeout
  // (Note [Failure is not a hang]). `what` names the wait in the error.
  void wait(void* stream, const std::string& what) override;
  // The host does not wait: records an event (a cudaEventDisableTiming cudaEvent_t, returned)
  // after the work enqueued on `stream` so far, for another stream to wait on
  // (cudaStreamWaitEvent), and hands it to the watchdog, which aborts the group if that work
  // has not finished within the timeout or a rank is lost meanwhile. The event stays valid
  // until the group is destroyed; it may be recorded again by a later watch() once complete.
  void* watch(void* stream, const std::string& what);
  // Throws tensor::Error if the group was aborted (by the watchdog, or an earlier failure),
  // naming this rank, `method` and why. Every collective checks this first.
  void check(const char* method) const override;
  // Stops the watchdog and destroys the communicator (bounded by the timeout, else aborts);
  // later calls throw. The destructor and tensor::cuda::shutdown() call it. Never throws.
  void close() noexcept override;
  // Every rank waits for every other (host side, over the rendezvous connections).
  void barrier();

  // Aborts the communicator and tells the other ranks why. Never throws.
  void abort(const std::string& reason) noexcept override;
  bool aborted() const override;  // without waiting for an abort in progress
  // abort(why), then throws tensor::Error with `why`.
  [[noreturn]] void fail(const std::string& why);

 private:
  struct Watched {
    void* event;  // cudaEvent_t
    std::chrono::steady_clock::time_point enqueued;
    std::string what;
  };
  NcclBackend() = default;
  void checkUsable(const char* method) const { check(method); }
  void checkTensor(const tensor::Tensor& t, const char* method) const;
  // Waits until the communicator is no longer busy with the last call (ncclInProgress).
  void settle(const std::string& what);
  // "" or why the job cannot go on: an NCCL async error, a lost peer. Takes mutex_.
  std::string trouble();
  void abortLocked(const std::string& reason) noexcept;
  void renewExitHook();
  void startWatchdog();
  void stopWatchdog() noexcept;
  void watchdogLoop() noexcept;
  // The watchdog's one pass: "" or why the group must be aborted.
  std::string watchdogPoll();

  WorldInfo world_;
  double timeout_ = 300;
  ncclComm* comm_ = nullptr;
  void* commStream_ = nullptr;
  void* event_ = nullptr;  // for wait()
  std::shared_ptr<Rendezvous> rendezvous_;
  std::string abortReason_;
  std::atomic<bool> aborted_ = false;  // abortReason_ is set (readable without mutex_)
  int groupDepth_ = 0;                 // open groupStart() calls
  std::string where_;                  // "dist (rank r of n): "
  // Note [Watchdog locking]: mutex_ guards comm_, rendezvous_ and abortReason_: the user's
  // thread holds it while it enqueues and settles NCCL calls, the watchdog while it polls or
  // aborts, so ncclCommAbort never races a call on the same communicator. Recursive: fail()
  // aborts from inside a locked call. watchMutex_ guards the watched work and the event pool.
  mutable std::recursive_mutex mutex_;
  std::mutex watchMutex_;
  std::condition_variable watchCv_;
  std::deque<Watched> watched_;
  std::vector<void*> idleEvents_;  // completed watch() events, to record again
  std::vector<void*> allEvents_;   // every watch() event, destroyed by close()
  bool stopWatchdog_ = false;
  bool exitHookRenewed_ = false;
  std::thread watchdog_;
};

}  // namespace dist
