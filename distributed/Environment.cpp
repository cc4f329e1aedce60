// Environment.cpp
#include "distributed/Environment.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "tensor/DType.h"

namespace dist {

namespace {

const char* kWhere = "dist::world_from_environment: ";

// An integer in [lo, hi] from variable `name`, or `fallback` when unset.
int integer(const std::function<const char*(const char*)>& getenv, const char* name, int fallback, long lo, long hi) {
  const char* v = getenv(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    throw tensor::Error(
        tensor::detail::concat(kWhere, "expected ", name, " to be an integer in [", lo, ", ", hi, "], got '", v, "'"));
  }
  return static_cast<int>(x);
}

}  // namespace

std::string WorldInfo::str() const {
  return tensor::detail::concat("rank ", rank, " of ", worldSize, " (local ", localRank, " of ", localWorldSize,
                                "), rendezvous ", masterAddr, ":", masterPort, ", from ", source);
}

WorldInfo world_from(const std::function<const char*(const char*)>& getenv) {
  WorldInfo w;
  const bool torchrun = getenv("WORLD_SIZE") || getenv("RANK");
  const bool mpi = getenv("OMPI_COMM_WORLD_SIZE") || getenv("OMPI_COMM_WORLD_RANK");
  auto value = [&](const char* name) { return std::string(name) + "=" + getenv(name); };
  if (mpi && (!getenv("OMPI_COMM_WORLD_SIZE") || !getenv("OMPI_COMM_WORLD_RANK"))) {
    throw tensor::Error(std::string(kWhere) +
                        "expected OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE together, got only " +
                        value(getenv("OMPI_COMM_WORLD_RANK") ? "OMPI_COMM_WORLD_RANK" : "OMPI_COMM_WORLD_SIZE"));
  }
  if (torchrun) {
    w.source = "torchrun-style variables (RANK, WORLD_SIZE)";
    if (!getenv("WORLD_SIZE") || !getenv("RANK")) {
      throw tensor::Error(std::string(kWhere) + "expected RANK and WORLD_SIZE together, got only " +
                          value(getenv("RANK") ? "RANK" : "WORLD_SIZE"));
    }
    w.worldSize = integer(getenv, "WORLD_SIZE", 1, 1, 1 << 20);
    w.rank = integer(getenv, "RANK", 0, 0, 1 << 20);
    w.localRank = integer(getenv, "LOCAL_RANK", w.worldSize == 1 ? 0 : -1, 0, 1 << 20);
    w.localWorldSize = integer(getenv, "LOCAL_WORLD_SIZE", w.worldSize, 1, 1 << 20);
    if (w.localRank < 0)
      throw tensor::Error(std::string(kWhere) + "expected LOCAL_RANK with RANK and WORLD_SIZE, got none");
  }
  if (mpi) {
    WorldInfo m;
    m.source = "Open MPI (OMPI_COMM_WORLD_*)";
    m.worldSize = integer(getenv, "OMPI_COMM_WORLD_SIZE", 1, 1, 1 << 20);
    m.rank = integer(getenv, "OMPI_COMM_WORLD_RANK", 0, 0, 1 << 20);
    m.localRank = integer(getenv, "OMPI_COMM_WORLD_LOCAL_RANK", 0, 0, 1 << 20);
    m.localWorldSize = integer(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE", m.worldSize, 1, 1 << 20);
    if (torchrun) {
      // Both launchers' variables (torchrun under mpirun, or a stale export): they must agree,
      // or which one is meant is a guess.
      const std::pair<const char*, const char*> pairs[] = {{"RANK", "OMPI_COMM_WORLD_RANK"},
                                                           {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"},
                                                           {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"},
                                                           {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}};
      for (const auto& [ours, theirs] : pairs) {
        if (getenv(ours) && getenv(theirs) &&
            std::strtol(getenv(ours), nullptr, 10) != std::strtol(getenv(theirs), nullptr, 10)) {
          throw tensor::Error(std::string(kWhere) + "expected torchrun's and Open MPI's variables to agree, got " +
                              value(ours) + " but " + value(theirs) + " (unset one launcher's variables)");
        }
      }
    } else {
      w = m;
    }
  }
  if (w.rank >= w.worldSize) {
    throw tensor::Error(tensor::detail::concat(kWhere, "expected a rank below the world size ", w.worldSize,
                                               ", got rank ", w.rank, " (", w.source, ")"));
  }
  if (w.localWorldSize > w.worldSize) {
    // named as the launcher spelled them (torchrun's are read when both launchers' are set)
    const bool fromMpi = mpi && !torchrun;
    const char* local = fromMpi ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "LOCAL_WORLD_SIZE";
    const char* world = fromMpi ? "OMPI_COMM_WORLD_SIZE" : "WORLD_SIZE";
    throw tensor::Error(tensor::detail::concat(kWhere, "expected ", local, " (the ranks on this host) at most ", world,
                                               "=", w.worldSize, ", got ", local, "=", w.localWorldSize, " (", w.source,
                                               ")"));
  }
  if (w.localRank >= w.localWorldSize) {
    throw tensor::Error(tensor::detail::concat(kWhere, "expected the local rank below the local world size ",
                                               w.localWorldSize, ", got ", w.localRank, " (", w.source, ")"));
  }
  if (const char* addr = getenv("MASTER_ADDR")) {
    if (!*addr) throw tensor::Error(std::string(kWhere) + "MASTER_ADDR is set but empty");
    w.masterAddr = addr;
  } else if (w.localWorldSize < w.worldSize) {
    // One host needs no address (the default is this host); several do.
    throw tensor::Error(
        tensor::detail::concat(kWhere, "expected MASTER_ADDR (rank 0's host) for a job over several hosts (",
                               w.worldSize, " ranks, ", w.localWorldSize, " on this host), got none",
                               mpi ? "; pass it with mpirun -x MASTER_ADDR=host -x MASTER_PORT=port" : ""));
  }
  w.masterPort = integer(getenv, "MASTER_PORT", w.masterPort, 1, 65535);
  if (const char* token = getenv("CUDNN_NN_DIST_TOKEN")) {
    if (!*token) throw tensor::Error(std::string(kWhere) + "CUDNN_NN_DIST_TOKEN is set but empty");
    w.token = token;
  }
  return w;
}

WorldInfo world_from_environment() {
  return world_from([](const char* name) { return std::getenv(name); });
}

double timeout_from_environment(double fallback) {
  const char* v = std::getenv("CUDNN_NN_DIST_TIMEOUT");
  if (!v) return fallback;
  char* end = nullptr;
  const double t = std::strtod(v, &end);
  if (end == v || *end != '\0') {
    throw tensor::Error(std::string("dist: expected CUDNN_NN_DIST_TIMEOUT to be a number of seconds > 0, got '") + v +
                        "'");
  }
  return checked_timeout(t, std::string("CUDNN_NN_DIST_TIMEOUT='") + v + "'");
}

double checked_timeout(double seconds, const std::string& what) {
  if (!std::isfinite(seconds) || !(seconds > 0) || seconds > kMaxTimeoutSeconds) {
    throw tensor::Error(tensor::detail::concat(
        "dist: expected a timeout of finite seconds in (0, 1e7] ", "(about 116 days), got ", what,
        seconds > kMaxTimeoutSeconds && std::isfinite(seconds) ? " (a deadline that far would overflow the clock)"
                                                               : ""));
  }
  return seconds;
}

}  // namespace dist
