// Environment.h: where this process stands in a data-parallel job, read from the launcher's
// environment: torchrun's (and scripts/launch's) RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or Open MPI's OMPI_COMM_WORLD_RANK / _SIZE /
// _LOCAL_RANK / _LOCAL_SIZE (with MASTER_ADDR and MASTER_PORT passed by `mpirun -x`). None of
// them set: a single process (rank 0 of 1). Pure host code: no GPU, no NCCL.
#pragma once

#include <functional>
#include <string>

namespace cudnn::dist {

struct WorldInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;       // which of this host's GPUs is ours (cuda:localRank)
  int localWorldSize = 1;  // processes on this host
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  std::string source = "defaults (a single process)";  // "torchrun", "Open MPI", ...
  std::string str() const;  // "rank 1 of 4 (local 1 of 2), rendezvous 10.0.0.1:29500, from torchrun"
};

// Reads the process environment. Throws tensor::Error naming the variable and its value when
// one is malformed or out of range (RANK=4 with WORLD_SIZE=4), or when a multi-host job lacks
// MASTER_ADDR.
WorldInfo world_from_environment();
// The same, from any lookup (nullptr for unset): what the tests call.
WorldInfo world_from(const std::function<const char*(const char*)>& getenv);

// Seconds every blocking step of cudnn::dist may take before it gives up with an error: the
// rendezvous, communicator creation, and each wait for a collective. CUDNN_NN_DIST_TIMEOUT
// (seconds, > 0) or `fallback`.
double timeout_from_environment(double fallback = 300);

}  // namespace cudnn::dist
