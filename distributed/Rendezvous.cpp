// Rendezvous.cpp: length-prefixed text frames over TCP; every wait has a deadline.
// Note [Rendezvous protocol]
//   rank 0 -> peer, at once:  "cudnn-nn rendezvous 2\n<nonce0>\n<token|none>"
//   peer -> rank 0:           "cudnn-nn rendezvous 2\n<rank>\n<world size>\n<nonce1>\n<proof>\n<host>\n<GPU uuid>\n<GPU
//   description>" rank 0 -> peer:           "ok\n<proof0>\n<payload>" once every rank arrived and the set-up is
//                             sound, "error\n<message>" otherwise (what rank 0 throws, or why
//                             this peer was turned away).
//   later, either way: "barrier" / "go", and "abort\n<reason>" before a rank closes.
// Nonces are 16 random bytes in hex. With CUDNN_NN_DIST_TOKEN set, proof is
// HMAC-SHA256(token, "client\n" nonce0 "\n" nonce1 "\n" rank "\n" world "\n" host "\n" uuid "\n" description)
// and proof0 is HMAC-SHA256(token, "server\n" nonce0 "\n" nonce1 "\n" payload), in hex:
// rank 0 gives nothing to a peer before its proof checks (compared in constant time), and a
// peer takes no payload from a rank 0 that cannot prove the token either. Without a token
// both are empty, and rank 0 cannot tell a stranger from a rank (Note [Strangers] in
// Rendezvous.h). A frame is a 4-byte big-endian length and that many bytes (at most 1 MiB;
// a hello at most 64 KiB).
// Note [Serving concurrently]: rank 0 polls the listener and every connection still in its
// handshake together, each with its own short deadline, so a silent or slow peer holds only
// its own slot, never the meeting.
#include "distributed/Rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "distributed/Hmac.h"
#include "tensor/DType.h"

namespace dist {

namespace {

using Clock = std::chrono::steady_clock;
const char* kMagic = "cudnn-nn rendezvous 2";
constexpr uint32_t kMaxFrame = 1u << 20;
constexpr uint32_t kMaxHello = 1u << 16;
constexpr double kHandshakeSeconds = 5;  // per connection, from its accept to its hello
constexpr size_t kMaxPending = 64;       // connections in their handshake at once

// Saturates: a deadline past the clock's range is the clock's end (Note [Timeouts are bounded]).
Clock::time_point after(double seconds) {
  const double left = std::chrono::duration<double>(Clock::time_point::max() - Clock::now()).count();
  if (!(seconds < left)) return Clock::time_point::max();
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(seconds, 0.0)));
}

int ms_left(Clock::time_point deadline) {
  const auto now = Clock::now();
  if (deadline <= now) return 0;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

std::string seconds_str(double s) {
  std::ostringstream os;
  os << s << " s";
  return os.str();
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string nonce() {
  std::random_device device;  // the kernel's randomness (getrandom) on Linux
  uint8_t bytes[16];
  for (auto& b : bytes) b = static_cast<uint8_t>(device());
  return detail::hex(bytes, sizeof bytes);
}

std::string client_proof(const std::string& token, const std::string& nonce0, const std::string& nonce1, int rank,
                         int world, const std::string& host, const DeviceIdentity& device) {
  if (token.empty()) return "";
  return detail::hex(
      detail::hmac_sha256(token, tensor::detail::concat("client\n", nonce0, "\n", nonce1, "\n", rank, "\n", world, "\n",
                                                        host, "\n", device.uuid, "\n", device.description)));
}

std::string server_proof(const std::string& token, const std::string& nonce0, const std::string& nonce1,
                         const std::string& payload) {
  if (token.empty()) return "";
  return detail::hex(detail::hmac_sha256(token, "server\n" + nonce0 + "\n" + nonce1 + "\n" + payload));
}

enum class Io { Ok, Eof, Timeout, Failed };

Io write_all(int fd, const std::string& bytes, Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    pollfd p{fd, POLLOUT, 0};
    const int r = ::poll(&p, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Io::Failed;
    if (r == 0) return Io::Timeout;
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Io::Failed;
    done += static_cast<size_t>(n);
  }
  return Io::Ok;
}

Io read_exact(int fd, char* out, size_t size, Clock::time_point deadline) {
  size_t done = 0;
  while (done < size) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Io::Failed;
    if (r == 0) return Io::Timeout;
    const ssize_t n = ::recv(fd, out + done, size - done, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0) return Io::Eof;
    if (n < 0) return errno == ECONNRESET ? Io::Eof : Io::Failed;
    done += static_cast<size_t>(n);
  }
  return Io::Ok;
}

std::string frame_bytes(const std::string& body) {
  const uint32_t n = htonl(static_cast<uint32_t>(body.size()));
  return std::string(reinterpret_cast<const char*>(&n), 4) + body;
}

Io send_frame(int fd, const std::string& body, Clock::time_point deadline) {
  return write_all(fd, frame_bytes(body), deadline);
}

Io recv_frame(int fd, std::string& body, Clock::time_point deadline, uint32_t limit = kMaxFrame) {
  uint32_t n = 0;
  Io r = read_exact(fd, reinterpret_cast<char*>(&n), 4, deadline);
  if (r != Io::Ok) return r;
  n = ntohl(n);
  if (n > limit) return Io::Failed;
  body.assign(n, '\0');
  return n ? read_exact(fd, body.data(), n, deadline) : Io::Ok;
}

std::vector<std::string> split_lines(const std::string& s, size_t max_parts) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (parts.size() + 1 < max_parts) {
    const size_t nl = s.find('\n', start);
    if (nl == std::string::npos) break;
    parts.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  parts.push_back(s.substr(start));
  return parts;
}

// "abort\n<reason>" -> "<reason>", anything else (a stray frame) -> itself
std::string abort_reason(const std::string& frame) {
  return frame.rfind("abort\n", 0) == 0 ? frame.substr(6) : "unexpected message '" + frame + "'";
}

bool parse_int(const std::string& s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

struct Hello {
  int rank = -1, worldSize = -1;
  std::string nonce, proof, host;
  DeviceIdentity device;
};

bool parse_hello(const std::string& frame, Hello& h) {
  const auto parts = split_lines(frame, 8);
  if (parts.size() != 8 || parts[0] != kMagic) return false;
  if (!parse_int(parts[1], h.rank) || !parse_int(parts[2], h.worldSize)) return false;
  h.nonce = parts[3];
  h.proof = parts[4];
  h.host = parts[5];
  h.device = {parts[6], parts[7]};
  return true;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) s += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return s;
}

// ---- name resolution under a deadline ----

std::mutex& resolver_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
detail::Resolver& resolver_slot() {
  static detail::Resolver* r = new detail::Resolver();
  return *r;
}

std::string getaddrinfo_resolver(const std::string& host, std::vector<uint32_t>& out) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int gai = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); gai != 0) return gai_strerror(gai);
  for (addrinfo* a = found; a; a = a->ai_next) {
    out.push_back(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr.s_addr);
  }
  ::freeaddrinfo(found);
  return out.empty() ? "no IPv4 address" : "";
}

// getaddrinfo has no timeout of its own: it runs on a thread of its own, and the caller waits
// for it until the deadline only (the thread finishes in the background, if ever).
std::vector<uint32_t> resolve(const std::string& host, Clock::time_point deadline, double timeoutSeconds,
                              const std::string& where) {
  struct Result {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::vector<uint32_t> addresses;
    std::string error;
  };
  auto result = std::make_shared<Result>();
  detail::Resolver resolver;
  {
    std::lock_guard<std::mutex> lock(resolver_mutex());
    resolver = resolver_slot();
  }
  if (!resolver) resolver = &getaddrinfo_resolver;
  std::thread([result, resolver, host] {
    std::vector<uint32_t> addresses;
    std::string error;
    try {
      error = resolver(host, addresses);
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard<std::mutex> lock(result->mutex);
    result->addresses = std::move(addresses);
    result->error = std::move(error);
    result->done = true;
    result->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(result->mutex);
  if (!result->cv.wait_until(lock, deadline, [&] { return result->done; })) {
    throw tensor::Error(where + "resolving MASTER_ADDR '" + host + "' did not finish within " +
                        seconds_str(timeoutSeconds) + " (a slow or unreachable name server? give an IP address)");
  }
  if (!result->error.empty()) {
    throw tensor::Error(where + "cannot resolve MASTER_ADDR '" + host + "': " + result->error);
  }
  return result->addresses;
}

std::string where_of(const WorldInfo& world) {
  return tensor::detail::concat("dist rendezvous at ", world.masterAddr, ":", world.masterPort, " (rank ", world.rank,
                                " of ", world.worldSize, "): ");
}

// Listens on MASTER_ADDR itself (all interfaces only when it says 0.0.0.0).
int listen_on(const WorldInfo& world, uint32_t address, const std::string& where) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener < 0) throw tensor::Error(where + "socket() failed: " + std::strerror(errno));
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = address;
  addr.sin_port = htons(static_cast<uint16_t>(world.masterPort));
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 1024) != 0) {
    const int err = errno;
    close_fd(listener);
    char text[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text);
    throw tensor::Error(where + "cannot listen on " + text + " port " + std::to_string(world.masterPort) + ": " +
                        std::strerror(err) +
                        (err == EADDRNOTAVAIL ? " (MASTER_ADDR must name rank 0's own host)"
                                              : " (another job on this port? choose another MASTER_PORT)"));
  }
  return listener;
}

// Dials rank 0 once on each address, each attempt bounded by a second; returns the connected
// socket or -1 (with `last_error`).
int dial_once(const std::vector<uint32_t>& addresses, int port, Clock::time_point deadline, std::string& last_error) {
  int fd = -1;
  for (size_t i = 0; i < addresses.size() && fd < 0; ++i) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) continue;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = addresses[i];
    addr.sin_port = htons(static_cast<uint16_t>(port));
    int rc = ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{s, POLLOUT, 0};
      rc = ::poll(&p, 1, std::min(ms_left(deadline), 1000)) == 1 ? 0 : -1;
      int err = rc == 0 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof err;
      if (rc == 0) ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
      errno = err;
      rc = err == 0 ? 0 : -1;
    }
    if (rc == 0) {
      const int one = 1;
      ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fd = s;
    } else {
      last_error = std::strerror(errno);
      close_fd(s);
    }
  }
  return fd;
}

// Retries until rank 0 listens; throws at the deadline.
int dial(const WorldInfo& world, const std::vector<uint32_t>& addresses, Clock::time_point deadline,
         double timeoutSeconds, const std::string& where) {
  std::string last_error = "none";
  int fd = -1;
  while (fd < 0) {
    fd = dial_once(addresses, world.masterPort, deadline, last_error);
    if (fd >= 0 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, ms_left(deadline))));
  }
  if (fd < 0) {
    throw tensor::Error(where + "could not reach rank 0 within " + seconds_str(timeoutSeconds) + " (last error: " +
                        last_error + "): is rank 0 running, with the same MASTER_ADDR and MASTER_PORT?");
  }
  return fd;
}

// "host/GPU uuid": one GPU, whichever number a rank's CUDA_VISIBLE_DEVICES gives it.
std::string gpu_key(const std::string& host, const DeviceIdentity& device) { return host + "/" + device.uuid; }

// Rank 0's side of the meeting (Note [Serving concurrently]): the connections in their
// handshake, the ranks that arrived, and the error that stops the meeting, if any.
class Meeting {
 public:
  // `fds`: the rendezvous' connections by rank, filled in as ranks arrive.
  Meeting(const WorldInfo& world, const DeviceIdentity& device, const std::string& host, std::vector<int>& fds,
          Clock::time_point deadline)
      : world_(world), host_(host), fds_(fds), deadline_(deadline), nonces_(static_cast<size_t>(world.worldSize)) {
    if (!device.uuid.empty()) gpu_owner_[gpu_key(host_, device)] = {0, device.description};
    rank_host_[0] = host_;
  }

  // Serves `listener` until every rank arrived, a set-up error, or the deadline; then closes
  // it and the connections still in their handshake.
  void run(int listener);
  // Settles the outcome (ranks that never arrived are an error) and tells it to every rank
  // that arrived and every claimant.
  void answer(const std::string& payload, double timeoutSeconds);
  // The error that stops the meeting; "" when it succeeded.
  const std::string& fatal() const { return fatal_; }

 private:
  struct Pending {
    int fd = -1;
    Clock::time_point deadline;
    std::string nonce, in;
  };

  void note(const std::string& why) {
    if (turned_away_.size() < 8) turned_away_.push_back(why);
  }
  void drop(Pending& p, const std::string& reply) {
    if (!reply.empty()) send_frame(p.fd, "error\n" + reply, after(0.2));  // best effort, briefly
    close_fd(p.fd);
  }
  std::string problem_with(const Hello& h);
  void on_hello(Pending& p, const std::string& frame);
  void read_pending(const std::vector<pollfd>& polls);
  void accept_new(int listener);
  void expire_pending();
  std::string missing_ranks(double timeoutSeconds) const;

  const WorldInfo& world_;
  const std::string host_;
  std::vector<int>& fds_;
  const Clock::time_point deadline_;
  std::vector<Pending> pending_;
  // "host/GPU uuid" -> rank, its description.
  std::map<std::string, std::pair<int, std::string>> gpu_owner_;
  std::map<int, std::string> rank_host_;
  std::vector<std::string> turned_away_;  // why connections were dropped, for the timeout's error
  // Each accepted rank's nonces (rank 0's, its own), for rank 0's proof in the answer.
  std::vector<std::pair<std::string, std::string>> nonces_;
  std::vector<int> claimants_;  // a proven peer whose set-up error stops the meeting: answered, closed
  std::string fatal_;
  int arrived_ = 1;
};

// What makes a hello's claim impossible here ("" if nothing): a set-up error.
std::string Meeting::problem_with(const Hello& h) {
  std::string problem;
  if (h.worldSize != world_.worldSize) {
    problem = tensor::detail::concat("world size mismatch: rank 0 (host ", host_, ") has WORLD_SIZE=", world_.worldSize,
                                     ", rank ", h.rank, " (host ", h.host, ") has WORLD_SIZE=", h.worldSize);
  } else if (h.rank <= 0 || h.rank >= world_.worldSize) {
    problem = tensor::detail::concat("rank ", h.rank, " (host ", h.host, ") is not a valid rank of ", world_.worldSize,
                                     (h.rank == 0 ? " (rank 0 is here already: RANK must be distinct)" : ""));
  } else if (fds_[h.rank] >= 0) {
    problem = tensor::detail::concat("rank ", h.rank, " arrived twice (hosts ", rank_host_[h.rank], " and ", h.host,
                                     "): RANK must be distinct");
  } else if (!h.device.uuid.empty()) {
    const auto it = gpu_owner_.find(gpu_key(h.host, h.device));
    if (it != gpu_owner_.end()) {
      problem = tensor::detail::concat("one GPU on host ", h.host, " is used by rank ", it->second.first, " (",
                                       it->second.second, ") and rank ", h.rank, " (", h.device.description,
                                       "): give each rank its own GPU (LOCAL_RANK, CUDA_VISIBLE_DEVICES)");
    }
  }
  return problem;
}

// One complete hello from `p`: accept it as its rank, turn it away, or (from a peer that proved
// the token) stop the meeting.
void Meeting::on_hello(Pending& p, const std::string& frame) {
  Hello h;
  if (!parse_hello(frame, h)) {
    note("a connection that did not speak the cudnn-nn rendezvous protocol 2");
    return drop(p, "expected a cudnn-nn rendezvous 2 hello");
  }
  const bool proven = !world_.token.empty();
  if (proven && !detail::constant_time_equal(
                    h.proof, client_proof(world_.token, p.nonce, h.nonce, h.rank, h.worldSize, h.host, h.device))) {
    note(tensor::detail::concat("a connection claiming rank ", h.rank, " (host ", h.host,
                                ") without CUDNN_NN_DIST_TOKEN's proof"));
    return drop(p, h.proof.empty() ? "this rendezvous needs CUDNN_NN_DIST_TOKEN (set the same on every rank)"
                                   : "the proof of CUDNN_NN_DIST_TOKEN does not match (set the same on every rank)");
  }
  if (const std::string problem = problem_with(h); !problem.empty()) {
    if (proven) {
      fatal_ = problem;  // one of ours, misconfigured: every rank hears it now
      claimants_.push_back(p.fd);
      p.fd = -1;
      return;
    }
    note(problem + " (turned away)");
    return drop(p, problem);
  }
  fds_[h.rank] = p.fd;
  nonces_[h.rank] = {p.nonce, h.nonce};
  p.fd = -1;
  rank_host_[h.rank] = h.host;
  if (!h.device.uuid.empty()) {
    gpu_owner_.emplace(gpu_key(h.host, h.device), std::make_pair(h.rank, h.device.description));
  }
  ++arrived_;
}

// Reads what the connections in their handshake sent (polls[i + 1] is pending_[i]'s); a
// complete hello is handled at once, and its connection leaves the handshake either way.
void Meeting::read_pending(const std::vector<pollfd>& polls) {
  for (size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    if (!(polls[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[4096];
    const ssize_t n = ::recv(p.fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      close_fd(p.fd);  // a rank that died on the way, or a port scan
      continue;
    }
    p.in.append(buf, static_cast<size_t>(n));
    if (p.in.size() < 4) continue;
    uint32_t len = 0;
    std::memcpy(&len, p.in.data(), 4);
    len = ntohl(len);
    if (len > kMaxHello) {
      note("a connection that sent an oversized frame");
      close_fd(p.fd);
      continue;
    }
    if (p.in.size() < 4 + static_cast<size_t>(len)) continue;
    on_hello(p, p.in.substr(4, len));
    if (p.fd >= 0) close_fd(p.fd);  // bytes past the hello, or turned away
    if (!fatal_.empty()) break;
  }
}

// Accepts every waiting connection and sends it rank 0's challenge.
void Meeting::accept_new(int listener) {
  const int one = 1;
  for (;;) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) break;
    if (pending_.size() >= kMaxPending) {
      note("connections beyond " + std::to_string(kMaxPending) + " in their handshake at once");
      close_fd(fd);
      continue;
    }
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Pending p;
    p.fd = fd;
    p.nonce = nonce();
    p.deadline = std::min(deadline_, after(kHandshakeSeconds));
    // A fresh socket's buffer takes this small frame at once; a peer that cannot is dropped.
    if (send_frame(fd, std::string(kMagic) + "\n" + p.nonce + "\n" + (world_.token.empty() ? "none" : "token"),
                   after(0.2)) != Io::Ok) {
      close_fd(fd);
      continue;
    }
    pending_.push_back(std::move(p));
  }
}

// Drops the connections past their handshake's deadline, and those closed already.
void Meeting::expire_pending() {
  const auto now = Clock::now();
  for (Pending& p : pending_) {
    if (p.fd >= 0 && now >= p.deadline) {
      note("a connection that sent no hello within " + seconds_str(kHandshakeSeconds));
      close_fd(p.fd);
    }
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& p) { return p.fd < 0; }),
                 pending_.end());
}

void Meeting::run(int listener) {
  while (arrived_ < world_.worldSize && fatal_.empty() && Clock::now() < deadline_) {
    // Note [Serving concurrently]
    std::vector<pollfd> polls{{listener, POLLIN, 0}};
    auto wake = deadline_;
    for (const Pending& p : pending_) {
      polls.push_back({p.fd, POLLIN, 0});
      wake = std::min(wake, p.deadline);
    }
    const int r = ::poll(polls.data(), polls.size(), ms_left(wake));
    if (r < 0 && errno != EINTR) break;
    if (r > 0) read_pending(polls);
    if (r > 0 && (polls[0].revents & POLLIN)) accept_new(listener);
    expire_pending();
  }
  close_fd(listener);
  for (Pending& p : pending_) close_fd(p.fd);
}

// The timeout's error: which ranks are missing, and what was turned away meanwhile.
std::string Meeting::missing_ranks(double timeoutSeconds) const {
  std::vector<int> missing;
  for (int k = 1; k < world_.worldSize; ++k) {
    if (fds_[k] < 0) missing.push_back(k);
  }
  std::string error = tensor::detail::concat(
      missing.size() == 1 ? "rank " : "ranks ", rank_list(missing), " of ", world_.worldSize, " did not arrive within ",
      seconds_str(timeoutSeconds), " (is every rank started, with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE?)");
  if (!turned_away_.empty()) {
    error += "; turned away meanwhile: ";
    for (size_t i = 0; i < turned_away_.size(); ++i) error += (i ? "; " : "") + turned_away_[i];
  }
  return error;
}

void Meeting::answer(const std::string& payload, double timeoutSeconds) {
  if (fatal_.empty() && arrived_ < world_.worldSize) fatal_ = missing_ranks(timeoutSeconds);
  const auto send_deadline = after(std::min(timeoutSeconds, 10.0));
  for (size_t k = 0; k < fds_.size(); ++k) {
    int& fd = fds_[k];
    if (fd < 0) continue;
    const std::string reply =
        fatal_.empty()
            ? "ok\n" + server_proof(world_.token, nonces_[k].first, nonces_[k].second, payload) + "\n" + payload
            : "error\n" + fatal_;
    if (send_frame(fd, reply, send_deadline) != Io::Ok && fatal_.empty()) {
      fatal_ = "a rank's connection failed while rank 0 answered it";
    }
  }
  for (int& fd : claimants_) {
    send_frame(fd, "error\n" + fatal_, send_deadline);
    close_fd(fd);
  }
}

}  // namespace

namespace detail {
void set_resolver(Resolver resolver) {
  std::lock_guard<std::mutex> lock(resolver_mutex());
  resolver_slot() = std::move(resolver);
}
}  // namespace detail

std::string PeerStatus::str() const {
  switch (state) {
    case State::Connected:
      return "";
    case State::Exited:
      return tensor::detail::concat("rank ", rank, " exited (its connection to ", seenByRank0 ? "rank 0" : "this rank",
                                    " closed)");
    case State::Aborted:
      return tensor::detail::concat("rank ", rank, " aborted: ", reason);
    case State::Closed:
      return reason;
  }
  return reason;
}

std::unique_ptr<Rendezvous> Rendezvous::join(const WorldInfo& world, const DeviceIdentity& device, std::string payload,
                                             double timeoutSeconds) {
  return world.rank == 0 ? serve(world, device, std::move(payload), timeoutSeconds)
                         : connect(world, device, timeoutSeconds);
}

std::unique_ptr<Rendezvous> Rendezvous::create(const WorldInfo& world, double timeoutSeconds) {
  checked_timeout(timeoutSeconds, "the rendezvous timeout " + seconds_str(timeoutSeconds));
  std::unique_ptr<Rendezvous> rv(new Rendezvous());
  rv->rank_ = world.rank;
  rv->worldSize_ = world.worldSize;
  rv->where_ = where_of(world);
  return rv;
}

std::unique_ptr<Rendezvous> Rendezvous::serve(const WorldInfo& world, const DeviceIdentity& device, std::string payload,
                                              double timeoutSeconds) {
  std::unique_ptr<Rendezvous> rv = create(world, timeoutSeconds);
  rv->payload_ = std::move(payload);
  rv->fds_.assign(static_cast<size_t>(world.worldSize), -1);
  if (world.worldSize == 1) return rv;
  const std::string& where = rv->where_;
  const auto deadline = after(timeoutSeconds);
  const std::string host = host_name();
  const std::vector<uint32_t> addresses = resolve(world.masterAddr, deadline, timeoutSeconds, where);
  const int listener = listen_on(world, addresses.front(), where);

  Meeting meeting(world, device, host, rv->fds_, deadline);
  meeting.run(listener);
  meeting.answer(rv->payload_, timeoutSeconds);
  if (const std::string fatal = meeting.fatal(); !fatal.empty()) {
    rv->abort(fatal);
    throw tensor::Error(where + fatal);
  }
  return rv;
}

std::unique_ptr<Rendezvous> Rendezvous::connect(const WorldInfo& world, const DeviceIdentity& device,
                                                double timeoutSeconds) {
  std::unique_ptr<Rendezvous> rv = create(world, timeoutSeconds);
  const std::string& where = rv->where_;
  const auto deadline = after(timeoutSeconds);
  const std::string host = host_name();
  const std::vector<uint32_t> addresses = resolve(world.masterAddr, deadline, timeoutSeconds, where);

  const int fd = dial(world, addresses, deadline, timeoutSeconds, where);
  rv->fds_ = {fd};
  auto fail = [&](const std::string& why) {
    rv->abort("");
    throw tensor::Error(where + why);
  };
  // Rank 0's challenge.
  std::string challenge;
  if (const Io io = recv_frame(fd, challenge, deadline, kMaxHello); io != Io::Ok) {
    fail(io == Io::Timeout ? "the listener on the rendezvous port said nothing within " + seconds_str(timeoutSeconds) +
                                 " (another program on this port?)"
                           : std::string("rank 0 closed the connection before its challenge (it exited, or turned "
                                         "this rank away)"));
  }
  const auto parts = split_lines(challenge, 3);
  if (parts.size() != 3 || parts[0] != kMagic || (parts[2] != "token" && parts[2] != "none")) {
    fail(
        "the listener on the rendezvous port does not speak the cudnn-nn rendezvous protocol 2 (another program, "
        "or another version of cudnn-nn?)");
  }
  if ((parts[2] == "token") != !world.token.empty()) {
    fail(world.token.empty() ? "rank 0 asks for CUDNN_NN_DIST_TOKEN, which this rank does not have"
                             : "rank 0 does not ask for CUDNN_NN_DIST_TOKEN, which this rank has: set the same on "
                               "every rank (or none)");
  }
  const std::string myNonce = nonce();
  const std::string hello =
      tensor::detail::concat(kMagic, "\n", world.rank, "\n", world.worldSize, "\n", myNonce, "\n",
                             client_proof(world.token, parts[1], myNonce, world.rank, world.worldSize, host, device),
                             "\n", host, "\n", device.uuid, "\n", device.description);
  std::string reply;
  Io io = send_frame(fd, hello, deadline);
  // Rank 0 answers at its own deadline at the latest; allow for a later start than ours.
  if (io == Io::Ok) io = recv_frame(fd, reply, after(timeoutSeconds + 10));
  if (io != Io::Ok) {
    fail(io == Io::Timeout ? "no answer from rank 0 within " + seconds_str(timeoutSeconds + 10)
                           : std::string("rank 0 closed the connection before answering (it exited or failed)"));
  }
  if (reply.rfind("ok\n", 0) == 0) {
    const auto ok = split_lines(reply, 3);
    if (ok.size() != 3) fail("rank 0's answer is malformed");
    rv->payload_ = ok[2];
    if (!detail::constant_time_equal(ok[1], server_proof(world.token, parts[1], myNonce, rv->payload_))) {
      fail("rank 0's answer does not prove CUDNN_NN_DIST_TOKEN (someone else is listening on the rendezvous port?)");
    }
    return rv;
  }
  fail("rank 0 reports: " + (reply.rfind("error\n", 0) == 0 ? reply.substr(6) : reply));
  return rv;  // not reached
}

Rendezvous::~Rendezvous() {
  for (int& fd : fds_) close_fd(fd);
}

PeerStatus Rendezvous::lostPeer() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (lost_.lost()) return lost_;
  for (size_t k = 0; k < fds_.size(); ++k) {
    if (fds_[k] < 0) continue;
    // Peek: a pending "barrier" frame is not a loss and stays for barrier() to read.
    char head[10];
    const ssize_t n = ::recv(fds_[k], head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    PeerStatus s;
    s.rank = rank_ == 0 ? static_cast<int>(k) : 0;
    s.seenByRank0 = rank_ == 0;
    std::string frame;
    if (n == static_cast<ssize_t>(sizeof head) && std::memcmp(head + 4, "abort\n", 6) == 0 &&
        recv_frame(fds_[k], frame, after(1.0)) == Io::Ok) {
      s.state = PeerStatus::State::Aborted;
      s.reason = abort_reason(frame);
    } else if (n > 0) {
      continue;  // another frame, or a part of one
    } else {
      s.state = PeerStatus::State::Exited;
    }
    lost_ = s;
    close_fd(fds_[k]);
    return lost_;
  }
  return lost_;
}

void Rendezvous::barrier(double timeoutSeconds) {
  if (worldSize_ == 1) return;
  std::unique_lock<std::mutex> lock(mutex_);
  checked_timeout(timeoutSeconds, "the barrier timeout " + seconds_str(timeoutSeconds));
  const auto deadline = after(timeoutSeconds);
  auto fail = [&](int peer, Io io, const std::string& frame) {
    PeerStatus s;
    s.rank = peer;
    s.seenByRank0 = rank_ == 0;
    std::string why;
    if (io == Io::Ok) {
      s.state = PeerStatus::State::Aborted;
      s.reason = abort_reason(frame);
      why = s.str();
    } else if (io == Io::Timeout) {
      s.state = PeerStatus::State::Closed;
      why = tensor::detail::concat("rank ", peer, " did not reach the barrier within ", seconds_str(timeoutSeconds));
      s.reason = why;
    } else {
      s.state = PeerStatus::State::Exited;
      why = tensor::detail::concat("rank ", peer, " exited (its connection closed)");
    }
    lost_ = s;
    lock.unlock();
    abort(why);
    throw tensor::Error(where_ + "barrier: " + why);
  };
  if (lost_.lost()) throw tensor::Error(where_ + "barrier: " + lost_.str());
  if (rank_ == 0) {
    for (size_t k = 1; k < fds_.size(); ++k) {
      std::string frame;
      const Io io = fds_[k] < 0 ? Io::Eof : recv_frame(fds_[k], frame, deadline);
      if (io != Io::Ok || frame != "barrier") fail(static_cast<int>(k), io, frame);
    }
    for (size_t k = 1; k < fds_.size(); ++k) {
      if (send_frame(fds_[k], "go", deadline) != Io::Ok) fail(static_cast<int>(k), Io::Eof, "");
    }
  } else {
    std::string frame;
    Io io = fds_[0] < 0 ? Io::Eof : send_frame(fds_[0], "barrier", deadline);
    if (io == Io::Ok) io = recv_frame(fds_[0], frame, deadline);
    if (io != Io::Ok || frame != "go") fail(0, io, frame);
  }
}

void Rendezvous::abort(const std::string& reason) noexcept {
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  try {
    lock.lock();
    const auto deadline = after(1.0);
    for (int& fd : fds_) {
      if (fd >= 0 && !reason.empty()) send_frame(fd, "abort\n" + reason, deadline);
      close_fd(fd);
    }
  } catch (...) {
    for (int& fd : fds_) close_fd(fd);
  }
  if (!lost_.lost()) {
    lost_.state = PeerStatus::State::Closed;
    lost_.reason = reason.empty() ? "this rank aborted" : reason;
  }
}

}  // namespace dist
