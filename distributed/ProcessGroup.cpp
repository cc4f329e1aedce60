// ProcessGroup.cpp
#include "distributed/ProcessGroup.h"

#include <cstdlib>
#include <cstring>

#include "distributed/Rendezvous.h"
#include "tensor/Cuda.h"
#ifdef CUDNN_NN_HAVE_NCCL
#include "distributed/NcclBackend.h"
#endif
#ifdef CUDNN_NN_HAVE_MPI
#include "distributed/MpiBackend.h"
#endif

namespace dist {

namespace {

// Note [Backend payload]: rank 0's payload says whether the job uses NCCL ("nccl\n<id>") or not
// ("none"), so every rank creates the same communicators (NCCL's creation is collective).
const char* kNoNccl = "none";

// CPU tensors in a job of one process not started by mpirun: every collective is the identity,
// so a single-process program needs neither MPI nor its start-up (MPI_Init of a singleton).
class SelfBackend : public Backend {
 public:
  const char* name() const override { return "self"; }
  tensor::Device device() const override { return tensor::Device::cpu(); }
  void allReduce(void*, int64_t, tensor::DType, ReduceOp, void*) override { check("allReduce"); }
  void broadcast(void*, int64_t, tensor::DType, int, void*) override { check("broadcast"); }
  // One rank: its own chunk is the whole result (the reduction of one value, its average too).
  void reduceScatter(const void* send, void* recv, int64_t count, tensor::DType dtype, ReduceOp, void*) override {
    check("reduceScatter");
    if (send != recv) std::memmove(recv, send, static_cast<size_t>(count) * tensor::itemsize(dtype));
  }
  void allGather(const void* send, void* recv, int64_t count, tensor::DType dtype, void*) override {
    check("allGather");
    if (send != recv) std::memmove(recv, send, static_cast<size_t>(count) * tensor::itemsize(dtype));
  }
  void wait(void*, const std::string&) override { check("wait"); }
  void check(const char* method) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!reason_.empty()) {
      throw tensor::Error(std::string("dist (rank 0 of 1): ") + method + ": the process group was aborted: " + reason_);
    }
  }
  void abort(const std::string& reason) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (reason_.empty()) reason_ = reason.empty() ? "aborted" : reason;
  }
  bool aborted() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return !reason_.empty();
  }
  void close() noexcept override { abort("the process group was closed (destroyed)"); }

 private:
  mutable std::mutex mutex_;
  std::string reason_;
};

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::create(const WorldInfo& world, double timeoutSeconds) {
  checked_timeout(timeoutSeconds, tensor::detail::concat("ProcessGroup::create's timeoutSeconds=", timeoutSeconds));
  std::shared_ptr<ProcessGroup> g(new ProcessGroup());
  g->world_ = world;
  g->timeout_ = timeoutSeconds;
  g->where_ = tensor::detail::concat("dist (rank ", world.rank, " of ", world.worldSize, "): ");
  DeviceIdentity device;
  // See Note [Backend payload]: every rank learns from rank 0 whether to create NCCL
  std::string payload = kNoNccl;
#ifdef CUDNN_NN_HAVE_NCCL
  // CUDNN_NN_DIST_NCCL=0: CPU tensors only, even on a GPU machine (more ranks than GPUs).
  const char* nccl_env = std::getenv("CUDNN_NN_DIST_NCCL");
  const bool gpu = !(nccl_env && std::string(nccl_env) == "0") && world.localRank < tensor::cuda::device_count();
  if (gpu) {
    device = {NcclBackend::device_uuid(world.localRank), NcclBackend::device_description(world.localRank)};
    if (world.rank == 0) payload = "nccl\n" + NcclBackend::unique_id();
  }
  g->ncclWhyNot_ = "rank 0 has no CUDA device for its LOCAL_RANK, or CUDNN_NN_DIST_NCCL=0";
#else
  g->ncclWhyNot_ = "built without NCCL";
#endif
  g->rendezvous_ = Rendezvous::join(world, device, payload, timeoutSeconds);
  const std::string& got = g->rendezvous_->payload();
  if (got.rfind("nccl\n", 0) == 0) {
#ifdef CUDNN_NN_HAVE_NCCL
    if (!gpu) {
      g->fail(tensor::detail::concat("expected a CUDA device for LOCAL_RANK ", world.localRank, " (rank 0 uses NCCL: ",
                                     "one GPU per rank), got ", tensor::cuda::device_count(), " visible"));
    }
    g->nccl_ = NcclBackend::create(world, timeoutSeconds, g->rendezvous_, got.substr(5));
#else
    g->fail("rank 0 uses NCCL, but this rank was built without it");
#endif
  } else if (got != kNoNccl) {
    g->fail("expected rank 0's backend choice, got a payload of " + std::to_string(got.size()) + " bytes");
  }
#ifdef CUDNN_NN_HAVE_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) g->mpi_ = MpiBackend::create(world, timeoutSeconds, g->rendezvous_);
  g->mpiWhyNot_ = "the job was not started by mpirun (" + world.source + ")";
#else
  g->mpiWhyNot_ = "built without MPI";
#endif
  if (!g->mpi_ && world.worldSize == 1) g->mpi_ = std::make_shared<SelfBackend>();
  return g;
}

ProcessGroup::~ProcessGroup() { close(); }

tensor::Device ProcessGroup::device() const { return nccl_ ? nccl_->device() : tensor::Device::cpu(); }

Backend* ProcessGroup::backend(const tensor::Device& d) const { return d.is_cuda() ? nccl_.get() : mpi_.get(); }

std::string ProcessGroup::backends() const {
  std::string s = nccl_ ? "NCCL" : "";
  if (mpi_) s += (s.empty() ? "" : ", ") + std::string(mpi_->name());
  return s.empty() ? "none" : s;
}

Backend& ProcessGroup::need(const tensor::Device& d, const char* method) const {
  Backend* b = backend(d);
  if (!b) {
    throw tensor::Error(where_ + method + ": expected a backend for " + d.str() + " tensors (" +
                        (d.is_cuda() ? "NCCL" : "MPI") + "), got none: " + (d.is_cuda() ? ncclWhyNot_ : mpiWhyNot_));
  }
  if (d.is_cuda() && d != b->device()) {
    throw tensor::Error(where_ + method + ": expected tensors on " + b->device().str() + " (this rank's GPU), got " +
                        d.str());
  }
  return *b;
}

void ProcessGroup::allReduce(tensor::Tensor& t, ReduceOp op, void* stream) {
  if (!t.defined() || !t.is_contiguous()) {
    throw tensor::Error(where_ + "allReduce: expected a contiguous tensor, got " +
                        (t.defined() ? t.description() + " (not contiguous)" : std::string("undefined")));
  }
  Backend& b = need(t.device(), "allReduce");
  b.allReduce(t.raw_data(), t.numel(), t.dtype(), op, stream);
}

void ProcessGroup::allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void* stream) {
  need(device(), "allReduce").allReduce(data, count, dtype, op, stream);
}

void ProcessGroup::broadcast(tensor::Tensor& t, int root, void* stream) {
  if (!t.defined() || !t.is_contiguous()) {
    throw tensor::Error(where_ + "broadcast: expected a contiguous tensor, got " +
                        (t.defined() ? t.description() + " (not contiguous)" : std::string("undefined")));
  }
  if (root < 0 || root >= world_.worldSize) {
    throw tensor::Error(where_ + "broadcast: expected a root rank in [0, " + std::to_string(world_.worldSize) +
                        "), got " + std::to_string(root));
  }
  need(t.device(), "broadcast").broadcast(t.raw_data(), t.numel(), t.dtype(), root, stream);
}

// Note [Equal chunks]: the shards of ShardedDataParallel are equal (padded) chunks, so the
// collectives take one chunk size: reduceScatter's input is worldSize chunks, its output one;
// allGather's input one chunk, its output worldSize.
void ProcessGroup::checkChunks(const tensor::Tensor& whole, const tensor::Tensor& chunk, const char* method) const {
  auto describe = [](const tensor::Tensor& t) {
    return t.defined() ? t.description() + (t.is_contiguous() ? "" : " (not contiguous)") : std::string("undefined");
  };
  if (!whole.defined() || !chunk.defined() || !whole.is_contiguous() || !chunk.is_contiguous() ||
      whole.dtype() != chunk.dtype() || whole.device() != chunk.device() ||
      whole.numel() != chunk.numel() * world_.worldSize) {
    throw tensor::Error(tensor::detail::concat(
        where_, method, ": expected contiguous tensors of one dtype and device, ", "the whole one worldSize (",
        world_.worldSize, ") times the chunk's elements, got whole ", describe(whole), " and chunk ", describe(chunk)));
  }
}

void ProcessGroup::reduceScatter(const tensor::Tensor& input, tensor::Tensor& output, ReduceOp op, void* stream) {
  checkChunks(input, output, "reduceScatter");
  need(input.device(), "reduceScatter")
      .reduceScatter(input.raw_data(), output.raw_data(), output.numel(), output.dtype(), op, stream);
}

void ProcessGroup::reduceScatter(const void* send, void* recv, int64_t count, tensor::DType dtype, ReduceOp op,
                                 void* stream) {
  need(device(), "reduceScatter").reduceScatter(send, recv, count, dtype, op, stream);
}

void ProcessGroup::allGather(const tensor::Tensor& input, tensor::Tensor& output, void* stream) {
  checkChunks(output, input, "allGather");
  need(input.device(), "allGather")
      .allGather(input.raw_data(), output.raw_data(), input.numel(), input.dtype(), stream);
}

void ProcessGroup::allGather(const void* send, void* recv, int64_t count, tensor::DType dtype, void* stream) {
  need(device(), "allGather").allGather(send, recv, count, dtype, stream);
}

void ProcessGroup::groupStart() { need(device(), "groupStart").groupStart(); }
void ProcessGroup::groupEnd() { need(device(), "groupEnd").groupEnd(); }

void ProcessGroup::wait(void* stream, const std::string& what) { need(device(), "wait").wait(stream, what); }

void ProcessGroup::wait(const tensor::Device& where, const std::string& what) {
  need(where, "wait").wait(nullptr, what);
}

void* ProcessGroup::commStream() {
#ifdef CUDNN_NN_HAVE_NCCL
  return static_cast<NcclBackend&>(need(tensor::Device::cuda(world_.localRank), "commStream")).commStream();
#else
  need(tensor::Device::cuda(world_.localRank), "commStream");
  return nullptr;
#endif
}

void* ProcessGroup::watch(void* stream, const std::string& what) {
#ifdef CUDNN_NN_HAVE_NCCL
  return static_cast<NcclBackend&>(need(tensor::Device::cuda(world_.localRank), "watch")).watch(stream, what);
#else
  (void)stream;
  (void)what;
  need(tensor::Device::cuda(world_.localRank), "watch");
  return nullptr;
#endif
}

void ProcessGroup::check(const char* method) const {
  if (nccl_) nccl_->check(method);
  if (mpi_) mpi_->check(method);
  if (!nccl_ && !mpi_ && rendezvous_ && rendezvous_->lostPeer().lost()) {
    throw tensor::Error(where_ + method + ": the process group was aborted: " + rendezvous_->lostPeer().str());
  }
}

void ProcessGroup::close() noexcept {
  if (nccl_) nccl_->close();
  if (mpi_) mpi_->close();
}

void ProcessGroup::barrier() {
  check("barrier");
  std::lock_guard<std::mutex> lock(barrierMutex_);
  try {
    rendezvous_->barrier(timeout_);
  } catch (const tensor::Error& e) {
    abort(e.what());
    throw;
  }
}

void ProcessGroup::abort(const std::string& reason) noexcept {
  if (nccl_) nccl_->abort(reason);
  if (mpi_) mpi_->abort(reason);
  if (rendezvous_) rendezvous_->abort(reason);
}

bool ProcessGroup::aborted() const {
  return (nccl_ && nccl_->aborted()) || (mpi_ && mpi_->aborted()) ||
         (!nccl_ && !mpi_ && rendezvous_ && rendezvous_->lostPeer().lost());
}

void ProcessGroup::fail(const std::string& why) {
  abort(why);
  throw tensor::Error(where_ + why);
}

}  // namespace dist
