// Rendezvous.h: the TCP meeting point of a data-parallel job, on MASTER_ADDR:MASTER_PORT.
// Rank 0 listens; every other rank connects (retrying until rank 0 is up) and says who it is
// (rank, world size, host, device); rank 0 checks the set-up and hands every rank one payload
// (the NCCL unique id) or the error that stops them all. The connections stay open after the
// meeting: they carry barriers, and a rank that exits or aborts is seen by the others
// (lostPeer) so a failure is an error within a bounded time, not a hang.
// Host code only (POSIX sockets); NCCL moves the data, this only bootstraps it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cudnn/dist/Environment.h"

namespace cudnn::dist {

class Rendezvous {
 public:
  // Meets the other ranks of `world`. `device` names this rank's GPU uniquely across hosts
  // (its UUID; "" for none: no GPU check). Rank 0 passes the payload; the others receive it.
  // Throws tensor::Error naming the problem, on every rank that can be told: rendezvous not
  // reachable within `timeoutSeconds`, ranks that never arrived, a world-size mismatch, a rank
  // twice, a GPU used by two ranks, port already taken.
  static std::unique_ptr<Rendezvous> join(const WorldInfo& world, const std::string& device, std::string payload,
                                          double timeoutSeconds);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  const std::string& payload() const { return payload_; }
  int rank() const { return rank_; }
  int worldSize() const { return worldSize_; }

  // Non-blocking: "" while every peer is connected, else what happened to one
  // ("rank 2 exited (its connection to rank 0 closed)", "rank 0 aborted: <reason>"). Rank 0
  // sees every rank; the others see rank 0 only (rank 0 aborts, and so tells them, when it
  // loses one). Once lost, stays lost.
  std::string lostPeer();
  // Every rank waits for every other; throws on timeout or a lost peer.
  void barrier(double timeoutSeconds);
  // Tells the peers why this rank stops (best effort) and closes the connections. Never throws.
  void abort(const std::string& reason) noexcept;

 private:
  Rendezvous() = default;
  int rank_ = 0, worldSize_ = 1;
  std::string payload_;
  std::string lost_;
  // Rank 0: the connection of rank r at fds_[r] (fds_[0] = -1); others: fds_[0] to rank 0.
  std::vector<int> fds_;
  std::string where_;  // "cudnn::dist rendezvous at host:port (rank r): "
};

}  // namespace cudnn::dist
