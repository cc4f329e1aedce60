// ProcessGroup.cpp
#include "cudnn/dist/ProcessGroup.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cudnn/dist/NcclCheck.h"
#include "cudnn/dist/Rendezvous.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::dist {

namespace {

using Clock = std::chrono::steady_clock;

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  return ncclSum;
}

std::string device_uuid(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  static const char* hex = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned char>(prop.uuid.bytes[i]);
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s + " (cuda:" + std::to_string(device) + ", " + prop.name + ")";
}

// Polls with little latency first, then gently.
class Backoff {
 public:
  void pause() {
    if (++n_ < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

 private:
  int n_ = 0;
};

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::create(const WorldInfo& world, double timeoutSeconds) {
  std::shared_ptr<ProcessGroup> g(new ProcessGroup());
  g->world_ = world;
  g->timeout_ = timeoutSeconds;
  g->where_ = tensor::detail::concat("cudnn::dist (rank ", world.rank, " of ", world.worldSize, "): ");
  const int visible = tensor::cuda::device_count();
  if (world.localRank >= visible) {
    throw tensor::Error(tensor::detail::concat(g->where_, "expected a CUDA device for LOCAL_RANK ", world.localRank,
                                               ", got ", visible, " visible (", world.localWorldSize,
                                               " ranks on this host need as many GPUs)"));
  }
  tensor::cuda::set_device(world.localRank);
  std::string id_bytes;
  if (world.rank == 0) {
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));
    id_bytes.assign(id.internal, sizeof id.internal);
  }
  g->rendezvous_ = Rendezvous::join(world, device_uuid(world.localRank), id_bytes, timeoutSeconds);
  ncclUniqueId id;
  if (g->rendezvous_->payload().size() != sizeof id.internal) {
    g->fail(tensor::detail::concat("expected an NCCL unique id of ", sizeof id.internal, " bytes from rank 0, got ",
                                   g->rendezvous_->payload().size()));
  }
  std::copy(g->rendezvous_->payload().begin(), g->rendezvous_->payload().end(), id.internal);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // Note [Failure is not a hang]
  ncclComm_t comm = nullptr;
  NCCL_CHECK(ncclCommInitRankConfig(&comm, world.worldSize, id, world.rank, &config));
  g->comm_ = comm;
  g->settle("creating the NCCL communicator");
  return g;
}

ProcessGroup::~ProcessGroup() {
  try {
    if (comm_) {
      // Finalize flushes what is enqueued; bounded, else abort (a peer may be gone).
      bool clean = false;
      const ncclResult_t r = ncclCommFinalize(comm_);
      if (r == ncclSuccess || r == ncclInProgress) {
        const auto deadline = Clock::now() + std::chrono::duration<double>(std::min(timeout_, 30.0));
        ncclResult_t state = ncclInProgress;
        Backoff backoff;
        while (Clock::now() < deadline) {
          if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess || state != ncclInProgress) break;
          backoff.pause();
        }
        clean = state == ncclSuccess;
      }
      if (clean)
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    if (commStream_) cudaStreamDestroy(static_cast<cudaStream_t>(commStream_));
  } catch (...) {
  }
}

void ProcessGroup::checkUsable(const char* method) const {
  if (!abortReason_.empty()) {
    throw tensor::Error(where_ + method + ": the process group was aborted: " + abortReason_);
  }
}

void ProcessGroup::checkTensor(const tensor::Tensor& t, const char* method) const {
  checkUsable(method);
  if (!t.defined() || t.device() != device() || !t.is_contiguous()) {
    throw tensor::Error(where_ + method + ": expected a contiguous tensor on " + device().str() + ", got " +
                        (t.defined() ? t.description() + (t.is_contiguous() ? "" : " (not contiguous)") : "undefined"));
  }
}

std::string ProcessGroup::trouble() {
  // A lost peer first: it names the rank, where NCCL's own error (a closed socket) may not.
  std::string lost = rendezvous_ ? rendezvous_->lostPeer() : std::string();
  if (!lost.empty() || !comm_) return lost;
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  if (r != ncclSuccess) state = r;
  if (state == ncclSuccess || state == ncclInProgress) return "";
  const char* last = ncclGetLastError(comm_);
  std::string why =
      std::string("NCCL reports ") + ncclGetErrorString(state) + (last && last[0] ? std::string(": ") + last : "");
  // NCCL may see a dead peer's socket close before the rendezvous does: a moment for the name.
  const auto until = Clock::now() + std::chrono::seconds(1);
  while (lost.empty() && rendezvous_ && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    lost = rendezvous_->lostPeer();
  }
  return lost.empty() ? why : why + " (" + lost + ")";
}

void ProcessGroup::settle(const std::string& what) {
  if (groupDepth_ > 0) return;  // calls inside a group are only recorded; groupEnd() settles them
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
  Backoff backoff;
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r == ncclSuccess && state == ncclSuccess) return;
    if (r != ncclSuccess || state != ncclInProgress) {
      const char* last = ncclGetLastError(comm_);
      fail(what + ": NCCL reports " + ncclGetErrorString(r != ncclSuccess ? r : state) +
           (last && last[0] ? std::string(": ") + last : ""));
    }
    if (polls % 64 == 0) {
      if (const std::string t = rendezvous_ ? rendezvous_->lostPeer() : ""; !t.empty()) fail(what + ": " + t);
      if (Clock::now() > deadline) fail(what + ": timed out after " + std::to_string(timeout_) + " s");
    }
    backoff.pause();
  }
}

void* ProcessGroup::commStream() {
  if (!commStream_) {
    tensor::cuda::DeviceGuard guard(world_.localRank);
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    commStream_ = s;
  }
  return commStream_;
}

void ProcessGroup::allReduce(tensor::Tensor& t, ReduceOp op, void* stream) {
  checkTensor(t, "allReduce");
  allReduce(t.raw_data(), t.numel(), t.dtype(), op, stream);
}

void ProcessGroup::allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void* stream) {
  checkUsable("allReduce");
  if (!stream) stream = tensor::cuda::stream(world_.localRank);
  NCCL_CHECK_COMM(comm_, ncclAllReduce(data, data, static_cast<size_t>(count), detail::nccl_type(dtype), nccl_op(op), comm_,
                                       static_cast<cudaStream_t>(stream)));
  settle("allReduce");
}

void ProcessGroup::broadcast(tensor::Tensor& t, int root, void* stream) {
  checkTensor(t, "broadcast");
  if (root < 0 || root >= world_.worldSize) {
    throw tensor::Error(where_ + "broadcast: expected a root rank in [0, " + std::to_string(world_.worldSize) +
                        "), got " + std::to_string(root));
  }
  if (!stream) stream = tensor::cuda::stream(world_.localRank);
  NCCL_CHECK_COMM(comm_, ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()), detail::nccl_type(t.dtype()),
                                       root, comm_, static_cast<cudaStream_t>(stream)));
  settle("broadcast");
}

void ProcessGroup::groupStart() {
  checkUsable("groupStart");
  NCCL_CHECK(ncclGroupStart());
  ++groupDepth_;
}

void ProcessGroup::groupEnd() {
  if (groupDepth_ == 0) throw tensor::Error(where_ + "groupEnd: expected groupStart() first");
  --groupDepth_;
  const ncclResult_t r = ncclGroupEnd();
  if (r != ncclSuccess && r != ncclInProgress) {
    const char* last = ncclGetLastError(comm_);
    fail(std::string("ncclGroupEnd failed: ") + ncclGetErrorString(r) +
         (last && last[0] ? std::string(" (") + last + ")" : ""));
  }
  settle("a group of collectives");
}

void ProcessGroup::wait(void* stream, const std::string& what) {
  checkUsable("wait");
  tensor::cuda::DeviceGuard guard(world_.localRank);
  if (!stream) stream = tensor::cuda::stream(world_.localRank);
  if (!event_) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    event_ = e;
  }
  auto* e = static_cast<cudaEvent_t>(event_);
  CUDA_CHECK(cudaEventRecord(e, static_cast<cudaStream_t>(stream)));
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
  Backoff backoff;
  for (int polls = 0;; ++polls) {
    const cudaError_t q = cudaEventQuery(e);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    if (polls % 16 == 0) {
      if (const std::string t = trouble(); !t.empty()) fail("waiting for " + what + ": " + t);
      if (Clock::now() > deadline) {
        fail("waiting for " + what + ": timed out after " + std::to_string(timeout_) +
             " s (a rank is missing, stuck, or issued different collectives)");
      }
    }
    backoff.pause();
  }
}

void ProcessGroup::barrier() {
  checkUsable("barrier");
  try {
    rendezvous_->barrier(timeout_);
  } catch (const tensor::Error& e) {
    abort(e.what());
    throw;
  }
}

void ProcessGroup::abort(const std::string& reason) noexcept {
  if (abortReason_.empty()) abortReason_ = reason.empty() ? "aborted" : reason;
  if (comm_) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  if (rendezvous_) rendezvous_->abort(abortReason_);
}

void ProcessGroup::fail(const std::string& why) {
  abort(why);
  throw tensor::Error(where_ + why);
}

}  // namespace cudnn::dist
