// Environment.h: where this process stands in a data-parallel job, read from the launcher's
// environment: torchrun's (and scripts/launch's) RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or Open MPI's OMPI_COMM_WORLD_RANK / _SIZE /
// _LOCAL_RANK / _LOCAL_SIZE (with MASTER_ADDR and MASTER_PORT passed by `mpirun -x`). None of
// them set: a single process (rank 0 of 1). Pure host code: no GPU, no NCCL.
#pragma once

#include <functional>
#include <string>

namespace dist {

struct WorldInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;       // which of this host's GPUs is ours (cuda:localRank)
  int localWorldSize = 1;  // processes on this host
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  std::string source = "defaults (a single process)";  // "torchrun", "Open MPI", ...
  // CUDNN_NN_DIST_TOKEN: a secret every rank shares; a peer must prove it knows it before the
  // rendezvous gives it anything (Note [Rendezvous protocol]). "": none asked. Never printed.
  std::string token;
  std::string str() const;  // "rank 1 of 4 (local 1 of 2), rendezvous 10.0.0.1:29500, from torchrun"
};

// Reads the process environment. Throws tensor::Error naming the variables and their values
// when one is malformed or out of range (RANK=4 with WORLD_SIZE=4, LOCAL_WORLD_SIZE above
// WORLD_SIZE), when Open MPI's size comes without its rank, when torchrun's and Open MPI's
// variables are both set and disagree, or when a multi-host job lacks MASTER_ADDR.
WorldInfo world_from_environment();
// The same, from any lookup (nullptr for unset): what the tests call.
WorldInfo world_from(const std::function<const char*(const char*)>& getenv);

// Seconds every blocking step of dist may take before it gives up with an error: the
// rendezvous, communicator creation, and each wait for a collective. CUDNN_NN_DIST_TIMEOUT
// (seconds, finite, in (0, kMaxTimeoutSeconds]) or `fallback`.
double timeout_from_environment(double fallback = 300);

// Note [Timeouts are bounded]: a deadline is now + timeout in the clock's int64 nanoseconds;
// inf, 1e10 or 1e300 seconds would overflow that conversion into a deadline in the past, so
// a wait would end at once. Timeouts are finite, > 0 and at most about 116 days.
constexpr double kMaxTimeoutSeconds = 1e7;
// `seconds` itself when it is such a timeout; else throws tensor::Error naming `what` (the
// variable or argument) and the value.
double checked_timeout(double seconds, const std::string& what);

}  // namespace dist
