// NcclBackend.cpp
#include "distributed/NcclBackend.h"

#include "distributed/Rendezvous.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>
#include <utility>

#include "distributed/NcclCheck.h"
#include "distributed/Rendezvous.h"
#include "tensor/Cuda.h"
#include "tensor/EnumTable.h"
#include "tensor/cuda/CudaCheck.h"

namespace dist {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::pair<ReduceOp, ncclRedOp_t> kNcclOps[] = {
    {ReduceOp::Sum, ncclSum},
    {ReduceOp::Avg, ncclAvg},
    {ReduceOp::Max, ncclMax},
    {ReduceOp::Min, ncclMin},
};

ncclRedOp_t nccl_op(ReduceOp op) { return tensor::lookup(kNcclOps, op).value_or(ncclSum); }

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

// Every group alive, for the shutdown hook (Note [Process group teardown]). Leaked, like the
// runtime's own state: the hook may run from exit, after static destructors.
struct LiveGroups {
  std::mutex mutex;
  std::set<NcclBackend*> groups;
  static LiveGroups& get() {
    static LiveGroups* live = new LiveGroups();
    return *live;
  }
};

void close_live_groups() {
  LiveGroups& live = LiveGroups::get();
  std::lock_guard<std::mutex> lock(live.mutex);
  for (NcclBackend* g : live.groups) g->close();
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

std::string NcclBackend::unique_id() {
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  return std::string(id.internal, sizeof id.internal);
}

std::string NcclBackend::device_uuid(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  static const char* hex = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned char>(prop.uuid.bytes[i]);
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

std::string NcclBackend::device_description(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return device_uuid(device) + " (cuda:" + std::to_string(device) + ", " + prop.name + ")";
}

std::shared_ptr<NcclBackend> NcclBackend::create(const WorldInfo& world, double timeoutSeconds,
                                                 std::shared_ptr<Rendezvous> rendezvous, const std::string& id_bytes) {
  std::shared_ptr<NcclBackend> g(new NcclBackend());
  g->world_ = world;
  g->timeout_ = timeoutSeconds;
  g->where_ = tensor::detail::concat("dist (rank ", world.rank, " of ", world.worldSize, "): ");
  tensor::cuda::set_device(world.localRank);
  g->rendezvous_ = std::move(rendezvous);
  ncclUniqueId id;
  if (id_bytes.size() != sizeof id.internal) {
    g->fail(tensor::detail::concat("expected an NCCL unique id of ", sizeof id.internal, " bytes from rank 0, got ",
                                   id_bytes.size()));
  }
  std::copy(id_bytes.begin(), id_bytes.end(), id.internal);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // Note [Failure is not a hang]
  ncclComm_t comm = nullptr;
  NCCL_CHECK(ncclCommInitRankConfig(&comm, world.worldSize, id, world.rank, &config));
  g->comm_ = comm;
  g->settle("creating the NCCL communicator");
  {
    LiveGroups& live = LiveGroups::get();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.groups.insert(g.get());
  }
  tensor::cuda::register_shutdown_hook(&close_live_groups);
  g->startWatchdog();
  return g;
}

NcclBackend::~NcclBackend() {
  try {
    LiveGroups& live = LiveGroups::get();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.groups.erase(this);
  } catch (...) {
  }
  close();
}

void NcclBackend::close() noexcept {
  stopWatchdog();
  try {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    cudaSetDevice(world_.localRank);
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
    if (abortReason_.empty()) abortReason_ = "the process group was closed (destroyed, or tensor::cuda::shutdown ran)";
    aborted_ = true;
    // The communicator is gone, so nothing on the group's stream can be stuck: drain it
    // before its events and buffers (DDP's buckets) go.
    if (commStream_) cudaStreamSynchronize(static_cast<cudaStream_t>(commStream_));
    if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = nullptr;
    {
      std::lock_guard<std::mutex> watchLock(watchMutex_);
      for (void* e : allEvents_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
      allEvents_.clear();
      idleEvents_.clear();
      watched_.clear();
    }
    if (commStream_) cudaStreamDestroy(static_cast<cudaStream_t>(commStream_));
    commStream_ = nullptr;
    cudaGetLastError();  // statuses on this path are ignored (the runtime may be unloading at exit)
    if (previous >= 0) cudaSetDevice(previous);
  } catch (...) {
  }
}

void NcclBackend::check(const char* method) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!abortReason_.empty()) {
    throw tensor::Error(where_ + method + ": the process group was aborted: " + abortReason_);
  }
}

bool NcclBackend::aborted() const { return aborted_.load(); }

void NcclBackend::checkTensor(const tensor::Tensor& t, const char* method) const {
  checkUsable(method);
  if (!t.defined() || t.device() != device() || !t.is_contiguous()) {
    throw tensor::Error(where_ + method + ": expected a contiguous tensor on " + device().str() + ", got " +
                        (t.defined() ? t.description() + (t.is_contiguous() ? "" : " (not contiguous)") : "undefined"));
  }
}

std::string NcclBackend::trouble() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // A lost peer first: it names the rank, where NCCL's own error (a closed socket) may not.
  std::string lost = rendezvous_ ? rendezvous_->lostPeer().str() : std::string();
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
    lost = rendezvous_->lostPeer().str();
  }
  return lost.empty() ? why : why + " (" + lost + ")";
}

void NcclBackend::settle(const std::string& what) {
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
      if (const std::string t = rendezvous_ ? rendezvous_->lostPeer().str() : ""; !t.empty()) fail(what + ": " + t);
      if (Clock::now() > deadline) fail(what + ": timed out after " + std::to_string(timeout_) + " s");
    }
    backoff.pause();
  }
}

void* NcclBackend::commStream() {
  if (!commStream_) {
    tensor::cuda::DeviceGuard guard(world_.localRank);
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    commStream_ = s;
  }
  return commStream_;
}

void NcclBackend::allReduce(tensor::Tensor& t, ReduceOp op, void* stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  checkTensor(t, "allReduce");
  allReduce(t.raw_data(), t.numel(), t.dtype(), op, stream);
}

void NcclBackend::allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void* stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  checkUsable("allReduce");
  if (!stream) stream = tensor::cuda::stream(world_.localRank);
  NCCL_CHECK_COMM(comm_, ncclAllReduce(data, data, static_cast<size_t>(count), detail::nccl_type(dtype), nccl_op(op),
                                       comm_, static_cast<cudaStream_t>(stream)));
  settle("allReduce");
  renewExitHook();
}

void NcclBackend::broadcast(tensor::Tensor& t, int root, void* stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  checkTensor(t, "broadcast");
  broadcast(t.raw_data(), t.numel(), t.dtype(), root, stream);
}

void NcclBackend::broadcast(void* data, int64_t count, tensor::DType dtype, int root, void* stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  checkUsable("broadcast");
  if (root < 0 || root >= world_.worldSize) {
    throw tensor::Error(where_ + "broadcast: expected a root rank in [0, " + std::to_string(world_.worldSize) +
                        "), got " + std::to_string(root));
  }
  if (!stream) stream = tensor::cuda::stream(world_.localRank);
  NCCL_CHECK_COMM(comm_, ncclBroadcast(data, data, static_cast<size_t>(count), detail::nccl_type(dtype), root, comm_,
                                       static_cast<cudaStream_t>(stream)));
  settle("broadcast");
  renewExitHook();
}

void NcclBackend::reduceScatter(const void* send, void* recv, int64_t count, tensor::DType dtype, ReduceOp op,
                                void* stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  checkUsable("reduceScatter");
  if (op != ReduceOp::Sum && op != ReduceOp::Avg) {
    throw tensor::Error(where_ + "reduceScatter: expected ReduceOp::Sum or ReduceOp::Avg, got another reduction");
  }
  if (!stream) stream = tensor::cuda::stream(world_.localRank);
  NCCL_CHECK_COMM(comm_, ncclReduceScatter(send, recv, static_cast<size_t>(count), detail::nccl_type(dtype),
                                           nccl_op(op), comm_, static_cast<cudaStream_t>(stream)));
  settle("reduceScatter");
  renewExitHook();
}

void NcclBackend::allGather(const void* send, void* recv, int64_t count, tensor::DType dtype, void* stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  checkUsable("allGather");
  if (!stream) stream = tensor::cuda::stream(world_.localRank);
  NCCL_CHECK_COMM(comm_, ncclAllGather(send, recv, static_cast<size_t>(count), detail::nccl_type(dtype), comm_,
                                       static_cast<cudaStream_t>(stream)));
  settle("allGather");
  renewExitHook();
}

// Note [Groups hold the lock]: from groupStart() to its groupEnd() the user's thread holds
// mutex_ (locked here, released by groupEnd), so the watchdog cannot abort the communicator
// while NCCL holds recorded calls on it.
void NcclBackend::groupStart() {
  std::unique_lock<std::recursive_mutex> lock(mutex_);
  checkUsable("groupStart");
  NCCL_CHECK(ncclGroupStart());
  ++groupDepth_;
  lock.release();  // held until groupEnd()
}

// Releases the lock groupStart() took: See Note [Groups hold the lock]
void NcclBackend::groupEnd() {
  std::unique_lock<std::recursive_mutex> lock(mutex_);
  if (groupDepth_ == 0) throw tensor::Error(where_ + "groupEnd: expected groupStart() first");
  std::unique_lock<std::recursive_mutex> fromStart(mutex_, std::adopt_lock);  // groupStart()'s
  --groupDepth_;
  const ncclResult_t r = ncclGroupEnd();
  if (r != ncclSuccess && r != ncclInProgress) {
    const char* last = ncclGetLastError(comm_);
    fail(std::string("ncclGroupEnd failed: ") + ncclGetErrorString(r) +
         (last && last[0] ? std::string(" (") + last + ")" : ""));
  }
  settle("a group of collectives");
  renewExitHook();
}

// Note [Process group teardown]: exit runs atexit hooks and static destructors newest first.
// NCCL may set parts of itself up only at the first collective (after create() registered the
// shutdown hook); registering it once more then keeps the groups' teardown ahead of those.
void NcclBackend::renewExitHook() {
  if (exitHookRenewed_ || groupDepth_ > 0) return;
  exitHookRenewed_ = true;
  tensor::cuda::register_shutdown_hook(&close_live_groups);
}

void NcclBackend::wait(void* stream, const std::string& what) {
  checkUsable("wait");  // the lock is taken only to poll: the watchdog may abort meanwhile
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
      checkUsable("wait");
      if (const std::string t = trouble(); !t.empty()) fail("waiting for " + what + ": " + t);
      if (Clock::now() > deadline) {
        fail("waiting for " + what + ": timed out after " + std::to_string(timeout_) +
             " s (a rank is missing, stuck, or issued different collectives)");
      }
    }
    backoff.pause();
  }
}

void NcclBackend::barrier() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  checkUsable("barrier");
  try {
    rendezvous_->barrier(timeout_);
  } catch (const tensor::Error& e) {
    abort(e.what());
    throw;
  }
}

void NcclBackend::abort(const std::string& reason) noexcept {
  try {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    abortLocked(reason);
  } catch (...) {  // a mutex error: nothing else here throws
  }
}

void NcclBackend::abortLocked(const std::string& reason) noexcept {
  if (abortReason_.empty()) abortReason_ = reason.empty() ? "aborted" : reason;
  aborted_ = true;
  if (comm_) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  if (rendezvous_) rendezvous_->abort(abortReason_);
}

// Aborts from inside a locked call: See Note [Watchdog locking] in NcclBackend.h
void NcclBackend::fail(const std::string& why) {
  abort(why);
  throw tensor::Error(where_ + why);
}

void* NcclBackend::watch(void* stream, const std::string& what) {
  checkUsable("watch");
  tensor::cuda::DeviceGuard guard(world_.localRank);
  if (!stream) stream = tensor::cuda::stream(world_.localRank);
  cudaEvent_t e = nullptr;
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    if (!idleEvents_.empty()) {
      e = static_cast<cudaEvent_t>(idleEvents_.back());
      idleEvents_.pop_back();
    }
  }
  if (!e) {
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    std::lock_guard<std::mutex> lock(watchMutex_);
    allEvents_.push_back(e);
  }
  const cudaError_t recorded = cudaEventRecord(e, static_cast<cudaStream_t>(stream));
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    if (recorded != cudaSuccess)
      idleEvents_.push_back(e);
    else
      watched_.push_back(Watched{e, Clock::now(), what});
  }
  CUDA_CHECK(recorded);
  // Wakes the watchdog: See Note [Watchdog]
  watchCv_.notify_one();
  return e;
}

void NcclBackend::startWatchdog() {
  watchdog_ = std::thread([this] { watchdogLoop(); });
}

void NcclBackend::stopWatchdog() noexcept {
  try {
    {
      std::lock_guard<std::mutex> lock(watchMutex_);
      stopWatchdog_ = true;
    }
    watchCv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
  } catch (...) {  // a mutex or join error
  }
}

// Note [Watchdog]: asleep while no watched work is pending; otherwise every millisecond it
// retires the completed work (its events return to the pool) and looks at the oldest pending
// one: past the timeout, or with a lost rank or an NCCL error, the group is aborted (which also
// releases NCCL kernels stuck waiting for a peer, so the streams behind them drain) and the
// reason is kept for the user's thread (check()).
void NcclBackend::watchdogLoop() noexcept {
  if (cudaSetDevice(world_.localRank) != cudaSuccess) cudaGetLastError();
  std::unique_lock<std::mutex> lock(watchMutex_);
  while (!stopWatchdog_) {
    if (watched_.empty()) {
      watchCv_.wait(lock, [&] { return stopWatchdog_ || !watched_.empty(); });
      continue;
    }
    lock.unlock();
    std::string why;
    try {
      why = watchdogPoll();
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
      why = "the watchdog failed";
    }
    if (!why.empty()) abort(why);
    lock.lock();
    if (!why.empty()) {
      for (const Watched& w : watched_) idleEvents_.push_back(w.event);
      watched_.clear();
    }
    if (!watched_.empty()) watchCv_.wait_for(lock, std::chrono::milliseconds(1), [&] { return stopWatchdog_; });
  }
}

std::string NcclBackend::watchdogPoll() {
  std::string what;
  double age = 0;
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    while (!watched_.empty()) {
      const Watched& w = watched_.front();
      const cudaError_t q = cudaEventQuery(static_cast<cudaEvent_t>(w.event));
      if (q == cudaErrorNotReady) break;
      if (q != cudaSuccess) {
        cudaGetLastError();
        return w.what + ": CUDA reports " + cudaGetErrorString(q);
      }
      idleEvents_.push_back(w.event);
      watched_.pop_front();
    }
    if (watched_.empty()) return "";
    what = watched_.front().what;
    age = seconds_since(watched_.front().enqueued);
  }
  if (age > timeout_) {
    return what + " did not finish within the timeout of " + seconds_text(timeout_) +
           " (a rank is missing, stuck, or issued different collectives)";
  }
  if (const std::string t = trouble(); !t.empty()) {
    return what + " (pending for " + seconds_text(age) + ", timeout " + seconds_text(timeout_) + "): " + t;
  }
  return "";
}

}  // namespace dist
