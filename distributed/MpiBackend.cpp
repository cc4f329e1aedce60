// MpiBackend.cpp
#include "distributed/MpiBackend.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>

#include "distributed/Rendezvous.h"
#include "tensor/DType.h"
#include "tensor/EnumTable.h"

namespace dist {

namespace {

using Clock = std::chrono::steady_clock;

bool& abandoned() {  // an operation left in flight: MPI_Finalize would wait for it forever
  static bool a = false;
  return a;
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !abandoned()) MPI_Finalize();
}

void ensure_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    throw tensor::Error("dist: MPI_Init_thread failed");
  }
  std::atexit(&finalize_at_exit);
}

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

// (const, not constexpr: Open MPI's datatypes are addresses of its globals)
const std::pair<tensor::DType, MPI_Datatype> kMpiTypes[] = {
    {tensor::DType::Float32, MPI_FLOAT},
    {tensor::DType::Float64, MPI_DOUBLE},
    {tensor::DType::Int64, MPI_INT64_T},
    {tensor::DType::UInt8, MPI_UINT8_T},
};

// MPI's type for a dtype; 16-bit floats only move as raw 16-bit words (broadcast).
MPI_Datatype mpi_type(tensor::DType t, bool reduce, const std::string& where) {
  if (const auto type = tensor::lookup(kMpiTypes, t)) return *type;
  if (!reduce && tensor::itemsize(t) == 2) return MPI_UINT16_T;  // float16, bfloat16
  throw tensor::Error(where + "expected float32, float64, int64 or uint8 for an MPI reduction, got " + tensor::name(t) +
                      " (MPI has no 16-bit float type)");
}

template <class T>
void divide(void* data, int64_t count, int by) {
  auto* p = static_cast<T*>(data);
  for (int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(by));
}

}  // namespace

struct MpiBackend::Op {
  MPI_Request request = MPI_REQUEST_NULL;
  void* data = nullptr;
  int64_t count = 0;
  tensor::DType dtype = tensor::DType::Float32;
  bool average = false;
};

std::shared_ptr<MpiBackend> MpiBackend::create(const WorldInfo& world, double timeoutSeconds,
                                               std::shared_ptr<Rendezvous> rendezvous) {
  std::shared_ptr<MpiBackend> b(new MpiBackend());
  b->world_ = world;
  b->timeout_ = timeoutSeconds;
  b->rendezvous_ = std::move(rendezvous);
  b->where_ = tensor::detail::concat("dist (rank ", world.rank, " of ", world.worldSize, ", MPI): ");
  ensure_initialized();
  // Errors come back as codes (a lost peer is then named from the rendezvous) instead of
  // aborting the job from inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != world.rank || size != world.worldSize) {
    throw tensor::Error(tensor::detail::concat(b->where_, "expected MPI_COMM_WORLD to be rank ", world.rank, " of ",
                                               world.worldSize, " (", world.source, "), got rank ", rank, " of ", size,
                                               " (CPU tensors need the MPI backend: start the job with mpirun)"));
  }
  return b;
}

MpiBackend::~MpiBackend() { close(); }

void MpiBackend::check(const char* method) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!abortReason_.empty()) throw tensor::Error(where_ + method + ": the process group was aborted: " + abortReason_);
}

bool MpiBackend::aborted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !abortReason_.empty();
}

size_t MpiBackend::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ops_.size();
}

void MpiBackend::allReduce(void* data, int64_t count, tensor::DType dtype, ReduceOp op, void*) {
  check("allReduce");
  const MPI_Datatype type = mpi_type(dtype, true, where_ + "allReduce: ");
  const MPI_Op mop = op == ReduceOp::Max ? MPI_MAX : op == ReduceOp::Min ? MPI_MIN : MPI_SUM;
  auto o = std::make_unique<Op>();
  o->data = data;
  o->count = count;
  o->dtype = dtype;
  o->average = op == ReduceOp::Avg;
  if (count > INT32_MAX) throw tensor::Error(where_ + "allReduce: expected at most 2^31 - 1 elements per call");
  const int rc = MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), type, mop, MPI_COMM_WORLD, &o->request);
  if (rc != MPI_SUCCESS) fail("MPI_Iallreduce failed: " + mpi_error(rc));
  std::lock_guard<std::mutex> lock(mutex_);
  ops_.push_back(std::move(o));
}

void MpiBackend::broadcast(void* data, int64_t count, tensor::DType dtype, int root, void*) {
  check("broadcast");
  if (root < 0 || root >= world_.worldSize) {
    throw tensor::Error(where_ + "broadcast: expected a root rank in [0, " + std::to_string(world_.worldSize) +
                        "), got " + std::to_string(root));
  }
  if (count > INT32_MAX) throw tensor::Error(where_ + "broadcast: expected at most 2^31 - 1 elements per call");
  auto o = std::make_unique<Op>();
  const int rc = MPI_Ibcast(data, static_cast<int>(count), mpi_type(dtype, false, where_ + "broadcast: "), root,
                            MPI_COMM_WORLD, &o->request);
  if (rc != MPI_SUCCESS) fail("MPI_Ibcast failed: " + mpi_error(rc));
  std::lock_guard<std::mutex> lock(mutex_);
  ops_.push_back(std::move(o));
}

void MpiBackend::reduceScatter(const void* send, void* recv, int64_t count, tensor::DType dtype, ReduceOp op, void*) {
  check("reduceScatter");
  const MPI_Datatype type = mpi_type(dtype, true, where_ + "reduceScatter: ");
  if (op != ReduceOp::Sum && op != ReduceOp::Avg) {
    throw tensor::Error(where_ + "reduceScatter: expected ReduceOp::Sum or ReduceOp::Avg, got another reduction");
  }
  if (count > INT32_MAX) throw tensor::Error(where_ + "reduceScatter: expected at most 2^31 - 1 elements per chunk");
  if (send == recv) throw tensor::Error(where_ + "reduceScatter: expected separate send and receive buffers");
  auto o = std::make_unique<Op>();
  o->data = recv;
  o->count = count;
  o->dtype = dtype;
  o->average = op == ReduceOp::Avg;
  const int rc =
      MPI_Ireduce_scatter_block(send, recv, static_cast<int>(count), type, MPI_SUM, MPI_COMM_WORLD, &o->request);
  if (rc != MPI_SUCCESS) fail("MPI_Ireduce_scatter_block failed: " + mpi_error(rc));
  std::lock_guard<std::mutex> lock(mutex_);
  ops_.push_back(std::move(o));
}

void MpiBackend::allGather(const void* send, void* recv, int64_t count, tensor::DType dtype, void*) {
  check("allGather");
  const MPI_Datatype type = mpi_type(dtype, false, where_ + "allGather: ");
  if (count > INT32_MAX) throw tensor::Error(where_ + "allGather: expected at most 2^31 - 1 elements per chunk");
  // In place (MPI_IN_PLACE) when `send` is this rank's own chunk of `recv`.
  const void* own =
      static_cast<const char*>(recv) + world_.rank * count * static_cast<int64_t>(tensor::itemsize(dtype));
  auto o = std::make_unique<Op>();
  const int rc = MPI_Iallgather(send == own ? MPI_IN_PLACE : send, static_cast<int>(count), type, recv,
                                static_cast<int>(count), type, MPI_COMM_WORLD, &o->request);
  if (rc != MPI_SUCCESS) fail("MPI_Iallgather failed: " + mpi_error(rc));
  std::lock_guard<std::mutex> lock(mutex_);
  ops_.push_back(std::move(o));
}

void MpiBackend::wait(void*, const std::string& what) {
  check("wait");
  std::vector<std::unique_ptr<Op>> ops;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ops.swap(ops_);
  }
  if (ops.empty()) return;
  std::vector<MPI_Request> requests;
  for (auto& o : ops) requests.push_back(o->request);
  const auto start = Clock::now();
  Clock::time_point lostSince{};
  for (int polls = 0;; ++polls) {
    int done = 0;
    const int rc = MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      // A dead peer's socket may fail MPI before the rendezvous sees it go: a moment for its name.
      std::string lost;
      for (int i = 0; i < 100 && lost.empty() && rendezvous_; ++i) {
        lost = rendezvous_->lostPeer().str();
        if (lost.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      fail("waiting for " + what + ": MPI reports " + mpi_error(rc) + (lost.empty() ? "" : " (" + lost + ")"));
    }
    if (done) break;
    if (polls % 16 == 0) {
      if (rendezvous_) {
        if (const PeerStatus s = rendezvous_->lostPeer(); s.lost()) {
          // A rank whose part of this collective is done may exit (the end of a program) before
          // the collective completes here: give MPI a moment before calling it lost.
          if (lostSince == Clock::time_point{}) lostSince = Clock::now();
          if (Clock::now() - lostSince > std::chrono::seconds(1)) fail("waiting for " + what + ": " + s.str());
        }
      }
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      if (waited > timeout_) {
        fail(tensor::detail::concat("waiting for ", what, ": timed out after ", timeout_,
                                    " s (a rank is missing, stuck, or issued different collectives)"));
      }
    }
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (auto& o : ops) {
    if (!o->average) continue;
    if (o->dtype == tensor::DType::Float64)
      divide<double>(o->data, o->count, world_.worldSize);
    else if (o->dtype == tensor::DType::Float32)
      divide<float>(o->data, o->count, world_.worldSize);
    else if (o->dtype == tensor::DType::Int64)
      divide<int64_t>(o->data, o->count, world_.worldSize);
    else
      divide<uint8_t>(o->data, o->count, world_.worldSize);
  }
}

void MpiBackend::abort(const std::string& reason) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (abortReason_.empty()) abortReason_ = reason.empty() ? "aborted" : reason;
    if (!ops_.empty()) abandoned() = true;
  } catch (...) {
  }
  if (rendezvous_) rendezvous_->abort(reason);
}

void MpiBackend::fail(const std::string& why) {
  abandoned() = true;  // the operations of this wait stay in flight
  abort(why);
  throw tensor::Error(where_ + why);
}

void MpiBackend::close() noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ops_.empty()) abandoned() = true;  // never waited for: leave MPI_Finalize out
    ops_.clear();
    if (abortReason_.empty()) abortReason_ = "the process group was closed (destroyed)";
  } catch (...) {
  }
}

}  // namespace dist
