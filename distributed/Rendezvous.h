// Rendezvous.h: the TCP meeting point of a data-parallel job, on MASTER_ADDR:MASTER_PORT.
// Rank 0 listens (serve) on that address only; every other rank connects (retrying until rank
// 0 is up), answers rank 0's challenge (proving CUDNN_NN_DIST_TOKEN where one is set) and says
// who it is (rank, world size, host, device); rank 0 checks the set-up and hands every rank one
// payload (the NCCL unique id) or the error that stops them all. The connections stay open
// after the meeting: they carry barriers, and a rank that exits or aborts is seen by the
// others (lostPeer) so a failure is an error within a bounded time, not a hang.
// Host code only (POSIX sockets); NCCL or MPI moves the data, this only bootstraps it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/Environment.h"

namespace dist {

// What a rank knows of its peers' connections (Rendezvous::lostPeer).
struct PeerStatus {
  enum class State {
    Connected,  // every peer is there
    Exited,     // `rank`'s connection closed without a word (it exited or crashed)
    Aborted,    // `rank` said why it stops: `reason`
    Closed,     // this rank aborted or closed the connections itself: `reason`
  };
  State state = State::Connected;
  int rank = -1;             // the peer concerned (Exited, Aborted)
  bool seenByRank0 = false;  // Exited: rank 0 saw it (else a rank saw rank 0 go)
  std::string reason;

  bool lost() const { return state != State::Connected; }
  // "" while connected; else "rank 2 exited (its connection to rank 0 closed)",
  // "rank 0 aborted: <reason>", or this rank's own reason.
  std::string str() const;
};

// A rank's GPU: its UUID (the same whatever CUDA_VISIBLE_DEVICES numbers it as) and a
// description for messages. Empty uuid: no GPU, no one-GPU-per-rank check.
struct DeviceIdentity {
  std::string uuid;
  std::string description;
};

class Rendezvous {
 public:
  // Meets the other ranks of `world`: serve() on rank 0, connect() on the others. `device`
  // is this rank's GPU (DeviceIdentity; {} for none). Rank 0
  // passes the payload; the others receive it. Throws tensor::Error naming the problem, on
  // every rank that can be told: rendezvous not reachable or MASTER_ADDR not resolved within
  // `timeoutSeconds`, ranks that never arrived, a world-size mismatch, a rank twice, a GPU used
  // by two ranks, port or address not available, a token that does not match.
  // Note [Strangers]: a connection that does not complete the handshake within a few seconds,
  // speaks another protocol, fails the token's proof or (without a token) claims something
  // impossible (a taken rank, another world size) is answered (where it spoke the protocol)
  // and dropped; the job goes on, and the timeout's error lists what was turned away. Only a
  // peer that proved the token can stop the meeting at once with a set-up error.
  static std::unique_ptr<Rendezvous> join(const WorldInfo& world, const DeviceIdentity& device, std::string payload,
                                          double timeoutSeconds);
  static std::unique_ptr<Rendezvous> serve(const WorldInfo& world, const DeviceIdentity& device, std::string payload,
                                           double timeoutSeconds);
  static std::unique_ptr<Rendezvous> connect(const WorldInfo& world, const DeviceIdentity& device,
                                             double timeoutSeconds);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  const std::string& payload() const { return payload_; }
  int rank() const { return rank_; }
  int worldSize() const { return worldSize_; }

  // Non-blocking: Connected while every peer is there, else what happened to one. Rank 0 sees
  // every rank; the others see rank 0 only (rank 0 aborts, and so tells them, when it loses
  // one). Once lost, stays lost.
  PeerStatus lostPeer();
  // Every rank waits for every other; throws on timeout or a lost peer.
  void barrier(double timeoutSeconds);
  // Tells the peers why this rank stops (best effort) and closes the connections. Never throws.
  void abort(const std::string& reason) noexcept;

 private:
  Rendezvous() = default;
  // serve() and connect()'s start: checks the timeout, then a rendezvous of `world`'s rank
  // with no connection yet.
  static std::unique_ptr<Rendezvous> create(const WorldInfo& world, double timeoutSeconds);
  int rank_ = 0, worldSize_ = 1;
  std::string payload_;
  PeerStatus lost_;
  // Rank 0: the connection of rank r at fds_[r] (fds_[0] = -1); others: fds_[0] to rank 0.
  std::vector<int> fds_;
  std::string where_;  // "dist rendezvous at host:port (rank r): "
  std::mutex mutex_;   // lostPeer, barrier and abort may come from a backend's watchdog thread
};

namespace detail {
// Name resolution (MASTER_ADDR to IPv4 addresses, network byte order), replaceable by tests
// (a slow resolver); returns "" or the resolver's error. Runs under the rendezvous timeout.
using Resolver = std::function<std::string(const std::string& host, std::vector<uint32_t>& addresses)>;
void set_resolver(Resolver resolver);  // nullptr: getaddrinfo
}  // namespace detail

}  // namespace dist
