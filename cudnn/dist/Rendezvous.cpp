// Rendezvous.cpp: length-prefixed text frames over TCP; every wait has a deadline.
// Note [Rendezvous protocol]
//   peer -> rank 0: "cudnn-nn rendezvous 1\n<rank>\n<world size>\n<host>\n<device>"
//   rank 0 -> peer: "ok\n<payload>" once every rank arrived and the set-up is sound,
//                   "error\n<message>" otherwise (the same message rank 0 throws).
//   later, either way: "barrier" / "go", and "abort\n<reason>" before a rank closes.
// A frame is a 4-byte big-endian length and that many bytes (at most 1 MiB).
#include "cudnn/dist/Rendezvous.h"

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
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "tensor/DType.h"

namespace cudnn::dist {

namespace {

using Clock = std::chrono::steady_clock;
const char* kMagic = "cudnn-nn rendezvous 1";
constexpr uint32_t kMaxFrame = 1u << 20;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
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

Io send_frame(int fd, const std::string& body, Clock::time_point deadline) {
  const uint32_t n = htonl(static_cast<uint32_t>(body.size()));
  std::string bytes(reinterpret_cast<const char*>(&n), 4);
  return write_all(fd, bytes + body, deadline);
}

Io recv_frame(int fd, std::string& body, Clock::time_point deadline) {
  uint32_t n = 0;
  Io r = read_exact(fd, reinterpret_cast<char*>(&n), 4, deadline);
  if (r != Io::Ok) return r;
  n = ntohl(n);
  if (n > kMaxFrame) return Io::Failed;
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

struct Hello {
  int rank = -1, worldSize = -1;
  std::string host, device;
};

bool parse_hello(const std::string& frame, Hello& h) {
  const auto parts = split_lines(frame, 5);
  if (parts.size() != 5 || parts[0] != kMagic) return false;
  try {
    h.rank = std::stoi(parts[1]);
    h.worldSize = std::stoi(parts[2]);
  } catch (const std::exception&) {
    return false;
  }
  h.host = parts[3];
  h.device = parts[4];
  return true;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) s += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return s;
}

}  // namespace

std::unique_ptr<Rendezvous> Rendezvous::join(const WorldInfo& world, const std::string& device, std::string payload,
                                             double timeoutSeconds) {
  std::unique_ptr<Rendezvous> rv(new Rendezvous());
  rv->rank_ = world.rank;
  rv->worldSize_ = world.worldSize;
  rv->where_ = tensor::detail::concat("cudnn::dist rendezvous at ", world.masterAddr, ":", world.masterPort, " (rank ",
                                      world.rank, " of ", world.worldSize, "): ");
  const std::string& where = rv->where_;
  const auto deadline = after(timeoutSeconds);
  const std::string host = host_name();

  if (world.rank == 0) {
    rv->payload_ = std::move(payload);
    rv->fds_.assign(static_cast<size_t>(world.worldSize), -1);
    if (world.worldSize == 1) return rv;
    int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) throw tensor::Error(where + "socket() failed: " + std::strerror(errno));
    const int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(world.masterPort));
    if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 1024) != 0) {
      const std::string err = std::strerror(errno);
      close_fd(listener);
      throw tensor::Error(where + "cannot listen on port " + std::to_string(world.masterPort) + ": " + err +
                          " (another job on this port? choose another MASTER_PORT)");
    }
    // "host/GPU id" -> rank. The id is the device string up to " (": its UUID, the same
    // whatever CUDA_VISIBLE_DEVICES numbers it as on each rank.
    auto gpu_key = [](const std::string& h, const std::string& d) { return h + "/" + d.substr(0, d.find(" (")); };
    std::map<std::string, std::pair<int, std::string>> gpu_owner;  // -> rank, its device string
    if (!device.empty()) gpu_owner[gpu_key(host, device)] = {0, device};
    std::map<int, std::string> rank_host;
    rank_host[0] = host;
    std::vector<int> unclaimed;  // connections whose rank is not known (bad hello)
    std::string fatal;
    int arrived = 1;
    while (arrived < world.worldSize && fatal.empty()) {
      pollfd p{listener, POLLIN, 0};
      const int r = ::poll(&p, 1, ms_left(deadline));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;  // the deadline
      int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::string frame;
      Hello h;
      const Io io = recv_frame(fd, frame, deadline);
      if (io != Io::Ok) {
        close_fd(fd);  // a connection that said nothing: a rank that died on the way, or a port scan
        continue;
      }
      if (!parse_hello(frame, h)) {
        fatal = "a connection to port " + std::to_string(world.masterPort) +
                " did not speak the cudnn-nn rendezvous protocol (another program on this port?)";
        unclaimed.push_back(fd);
      } else if (h.worldSize != world.worldSize) {
        fatal = tensor::detail::concat("world size mismatch: rank 0 (host ", host, ") has WORLD_SIZE=", world.worldSize,
                                       ", rank ", h.rank, " (host ", h.host, ") has WORLD_SIZE=", h.worldSize);
        unclaimed.push_back(fd);
      } else if (h.rank <= 0 || h.rank >= world.worldSize) {
        fatal = tensor::detail::concat("rank ", h.rank, " (host ", h.host, ") is not a valid rank of ", world.worldSize,
                                       (h.rank == 0 ? " (rank 0 is here already: RANK must be distinct)" : ""));
        unclaimed.push_back(fd);
      } else if (rv->fds_[h.rank] >= 0) {
        fatal = tensor::detail::concat("rank ", h.rank, " arrived twice (hosts ", rank_host[h.rank], " and ", h.host,
                                       "): RANK must be distinct");
        unclaimed.push_back(fd);
      } else {
        rv->fds_[h.rank] = fd;
        rank_host[h.rank] = h.host;
        ++arrived;
        if (!h.device.empty()) {
          const auto [it, fresh] = gpu_owner.emplace(gpu_key(h.host, h.device), std::make_pair(h.rank, h.device));
          if (!fresh) {
            fatal = tensor::detail::concat("one GPU on host ", h.host, " is used by rank ", it->second.first, " (",
                                           it->second.second, ") and rank ", h.rank, " (", h.device,
                                           "): give each rank its own GPU (LOCAL_RANK, CUDA_VISIBLE_DEVICES)");
          }
        }
      }
    }
    close_fd(listener);
    if (fatal.empty() && arrived < world.worldSize) {
      std::vector<int> missing;
      for (int k = 1; k < world.worldSize; ++k) {
        if (rv->fds_[k] < 0) missing.push_back(k);
      }
      fatal =
          tensor::detail::concat(missing.size() == 1 ? "rank " : "ranks ", rank_list(missing), " of ", world.worldSize,
                                 " did not arrive within ", seconds_str(timeoutSeconds),
                                 " (is every rank started, with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE?)");
    }
    const std::string reply = fatal.empty() ? "ok\n" + rv->payload_ : "error\n" + fatal;
    const auto send_deadline = after(std::min(timeoutSeconds, 10.0));
    for (int& fd : rv->fds_) {
      if (fd >= 0 && send_frame(fd, reply, send_deadline) != Io::Ok && fatal.empty()) {
        fatal = "a rank's connection failed while rank 0 answered it";
      }
    }
    for (int& fd : unclaimed) {
      send_frame(fd, reply, send_deadline);
      close_fd(fd);
    }
    if (!fatal.empty()) {
      rv->abort(fatal);
      throw tensor::Error(where + fatal);
    }
    return rv;
  }

  // ---- ranks 1..n-1: connect to rank 0, retrying until it listens ----
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(world.masterPort);
  if (const int gai = ::getaddrinfo(world.masterAddr.c_str(), port.c_str(), &hints, &found); gai != 0) {
    throw tensor::Error(where + "cannot resolve MASTER_ADDR '" + world.masterAddr + "': " + gai_strerror(gai));
  }
  std::string last_error = "none";
  int fd = -1;
  while (fd < 0) {
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
      int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (s < 0) continue;
      int rc = ::connect(s, a->ai_addr, a->ai_addrlen);
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
        ::fcntl(s, F_SETFL, ::fcntl(s, F_GETFL) & ~O_NONBLOCK);
        const int one = 1;
        ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd = s;
      } else {
        last_error = std::strerror(errno);
        close_fd(s);
      }
    }
    if (fd >= 0 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, ms_left(deadline))));
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    throw tensor::Error(where + "could not reach rank 0 within " + seconds_str(timeoutSeconds) + " (last error: " +
                        last_error + "): is rank 0 running, with the same MASTER_ADDR and MASTER_PORT?");
  }
  rv->fds_ = {fd};
  const std::string hello =
      tensor::detail::concat(kMagic, "\n", world.rank, "\n", world.worldSize, "\n", host, "\n", device);
  std::string reply;
  Io io = send_frame(fd, hello, deadline);
  // Rank 0 answers at its own deadline at the latest; allow for a later start than ours.
  if (io == Io::Ok) io = recv_frame(fd, reply, after(timeoutSeconds + 10));
  if (io != Io::Ok) {
    rv->abort("");
    throw tensor::Error(where + (io == Io::Timeout ? "no answer from rank 0 within " + seconds_str(timeoutSeconds + 10)
                                                   : std::string("rank 0 closed the connection before answering (it "
                                                                 "exited or failed)")));
  }
  if (reply.rfind("ok\n", 0) == 0) {
    rv->payload_ = reply.substr(3);
    return rv;
  }
  rv->abort("");
  throw tensor::Error(where + "rank 0 reports: " + (reply.rfind("error\n", 0) == 0 ? reply.substr(6) : reply));
}

Rendezvous::~Rendezvous() {
  for (int& fd : fds_) close_fd(fd);
}

std::string Rendezvous::lostPeer() {
  if (!lost_.empty()) return lost_;
  for (size_t k = 0; k < fds_.size(); ++k) {
    if (fds_[k] < 0) continue;
    // Peek: a pending "barrier" frame is not a loss and stays for barrier() to read.
    char head[10];
    const ssize_t n = ::recv(fds_[k], head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    const int peer = rank_ == 0 ? static_cast<int>(k) : 0;
    std::string frame;
    if (n == static_cast<ssize_t>(sizeof head) && std::memcmp(head + 4, "abort\n", 6) == 0 &&
        recv_frame(fds_[k], frame, after(1.0)) == Io::Ok) {
      lost_ = tensor::detail::concat("rank ", peer, " aborted: ", abort_reason(frame));
    } else if (n > 0) {
      continue;  // another frame, or a part of one
    } else {
      lost_ = tensor::detail::concat("rank ", peer, " exited (its connection to ", rank_ == 0 ? "rank 0" : "this rank",
                                     " closed)");
    }
    close_fd(fds_[k]);
    return lost_;
  }
  return lost_;
}

void Rendezvous::barrier(double timeoutSeconds) {
  if (worldSize_ == 1) return;
  const auto deadline = after(timeoutSeconds);
  auto fail = [&](int peer, Io io, const std::string& frame) {
    std::string why;
    if (io == Io::Ok)
      why = tensor::detail::concat("rank ", peer, " aborted: ", abort_reason(frame));
    else if (io == Io::Timeout)
      why = tensor::detail::concat("rank ", peer, " did not reach the barrier within ", seconds_str(timeoutSeconds));
    else
      why = tensor::detail::concat("rank ", peer, " exited (its connection closed)");
    lost_ = why;
    abort(why);
    throw tensor::Error(where_ + "barrier: " + why);
  };
  if (!lost_.empty()) throw tensor::Error(where_ + "barrier: " + lost_);
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
  try {
    const auto deadline = after(1.0);
    for (int& fd : fds_) {
      if (fd >= 0 && !reason.empty()) send_frame(fd, "abort\n" + reason, deadline);
      close_fd(fd);
    }
  } catch (...) {
    for (int& fd : fds_) close_fd(fd);
  }
  if (lost_.empty()) lost_ = reason.empty() ? "this rank aborted" : reason;
}

}  // namespace cudnn::dist
