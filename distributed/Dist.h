// Dist.h: the process-wide entry points of data parallelism, one process per GPU (NCCL) or
// per CPU rank under mpirun (MPI), as torch.distributed: init() joins the job its launcher describes (scripts/launch,
// torchrun, mpirun; Environment.h) and keeps the default ProcessGroup; the collectives below use it.
//   dist::init();
//   auto ddp = std::make_shared<dist::DistributedDataParallel>(net);
// A single process with no launcher variables is rank 0 of 1, so the same program runs alone.
#pragma once

#include <memory>

#include "distributed/ProcessGroup.h"

namespace dist {

// Joins the job and creates the default group (once; later calls return it). With NCCL, sets
// the current CUDA device to cuda:LOCAL_RANK. Throws tensor::Error naming the problem.
std::shared_ptr<ProcessGroup> init();
std::shared_ptr<ProcessGroup> init(const WorldInfo& world, double timeoutSeconds = timeout_from_environment());
bool is_initialized();
// The default group; throws when init() has not run.
std::shared_ptr<ProcessGroup> default_group();
int rank();        // 0 before init()
int world_size();  // 1 before init()
// Collectives over the default group, on the tensor's backend (NCCL: the device's stream),
// completed before they return
// (the host waits, Note [Failure is not a hang] in ProcessGroup.h).
void all_reduce(tensor::Tensor& t, ReduceOp op = ReduceOp::Sum);
void broadcast(tensor::Tensor& t, int root = 0);
// Equal chunks (ProcessGroup::reduceScatter / allGather): `output` gets this rank's chunk of the
// reduced `input`; every rank's `input` in order.
void reduce_scatter(const tensor::Tensor& input, tensor::Tensor& output, ReduceOp op = ReduceOp::Sum);
void all_gather(const tensor::Tensor& input, tensor::Tensor& output);
void barrier();
// Releases the default group (also done at exit, before CUDA goes).
void destroy();

}  // namespace dist
