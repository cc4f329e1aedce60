// The rendezvous as several processes on this machine (no GPU): the meeting, the barrier, and
// every failure it must turn into a clear error within a bounded time.
#include <doctest/doctest.h>

#include <unistd.h>

#include <arpa/inet.h>

#include <chrono>
#include <thread>

#include "distributed/Rendezvous.h"
#include "tests/dist/Ranks.h"
#include "tests/support/ErrorText.h"

using dist::Rendezvous;
using dist::WorldInfo;
using testing::has;

namespace {

WorldInfo world(int rank, int size, int port) {
  WorldInfo w;
  w.rank = rank;
  w.worldSize = size;
  w.localRank = rank;
  w.localWorldSize = size;
  w.masterAddr = "127.0.0.1";
  w.masterPort = port;
  w.source = "test";
  return w;
}

// A raw connection to 127.0.0.1:port (retrying until it is taken), or -1 after `seconds`.
int raw_connect(int port, double seconds = 10, const char* address = "127.0.0.1") {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, address, &a.sin_addr);
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return s;
    ::close(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

void raw_send(int fd, const std::string& body) {
  const uint32_t n = htonl(static_cast<uint32_t>(body.size()));
  std::string bytes(reinterpret_cast<const char*>(&n), 4);
  bytes += body;
  (void)!::write(fd, bytes.data(), bytes.size());
}

// One frame's body, or "(closed)".
std::string raw_recv(int fd) {
  uint32_t n = 0;
  if (::recv(fd, &n, 4, MSG_WAITALL) != 4) return "(closed)";
  std::string body(ntohl(n), '\0');
  if (!body.empty() && ::recv(fd, body.data(), body.size(), MSG_WAITALL) != static_cast<ssize_t>(body.size()))
    return "(closed)";
  return body;
}

dist::DeviceIdentity gpu(const std::string& uuid) { return {uuid, uuid + " (cuda:0)"}; }

std::string describe(const std::vector<testing::RankOutcome>& out) {
  std::string s;
  for (size_t i = 0; i < out.size(); ++i) {
    s += "rank " + std::to_string(i) + " exit " + std::to_string(out[i].exitCode) + " after " +
         std::to_string(out[i].seconds) + " s: " + out[i].text + "\n";
  }
  return s;
}

}  // namespace

TEST_CASE("rendezvous: four ranks meet, get rank 0's payload (binary), and pass barriers") {
  const int port = testing::free_port();
  const std::string payload("nccl\0id\xff bytes", 14);
  const auto out = testing::run_ranks(
      4,
      [&](int r) {
        // Ranks start in reverse order: the others must retry until rank 0 listens.
        std::this_thread::sleep_for(std::chrono::milliseconds(100 * (3 - r)));
        auto rv = Rendezvous::join(world(r, 4, port), gpu("gpu" + std::to_string(r)), r == 0 ? payload : "", 20);
        rv->barrier(20);
        const std::string lost = rv->lostPeer().str();  // nobody leaves before all pass the next barrier
        rv->barrier(20);
        if (!lost.empty()) return lost;
        return rv->payload() == payload ? std::string("ok") : std::string("wrong payload");
      },
      60);
  INFO(describe(out));
  for (const auto& o : out) {
    CHECK(o.exitCode == 0);
    CHECK(o.text == "ok");
  }
}

TEST_CASE("rendezvous: world size 1 needs no peer and no port") {
  auto rv = Rendezvous::join(world(0, 1, 1), {}, "id", 1);
  CHECK(rv->payload() == "id");
  rv->barrier(1);
  CHECK_FALSE(rv->lostPeer().lost());
}

TEST_CASE("rendezvous: an unreachable rank 0 is an error naming the address, after the timeout") {
  const int port = testing::free_port();
  const auto start = std::chrono::steady_clock::now();
  const std::string e = testing::error_of([&] { Rendezvous::join(world(1, 2, port), {}, "", 1.0); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(e);
  CHECK(has(e, "127.0.0.1:" + std::to_string(port)));
  CHECK(has(e, "could not reach rank 0 within 1 s"));
  CHECK(has(e, "Connection refused"));
  CHECK(took >= 0.9);
  CHECK(took < 5);
}

TEST_CASE("rendezvous: an unresolvable MASTER_ADDR is named") {
  WorldInfo w = world(1, 2, 29500);
  w.masterAddr = "no-such-host.invalid";
  // 5 s: a loaded machine's resolver has taken over 1 s to say no; either way the name is given
  const std::string e = testing::error_of([&] { Rendezvous::join(w, {}, "", 5.0); });
  INFO(e);
  CHECK((has(e, "cannot resolve MASTER_ADDR 'no-such-host.invalid'") ||
         has(e, "resolving MASTER_ADDR 'no-such-host.invalid' did not finish within")));
}

TEST_CASE("rendezvous: a rank that never arrives stops the others with an error naming it") {
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      2,
      [&](int r) {  // ranks 0 and 1 of 3; rank 2 never comes
        Rendezvous::join(world(r, 3, port), {}, "id", 1.5);
        return std::string("(no error)");
      },
      30);
  INFO(describe(out));
  CHECK(out[0].exitCode == 1);
  CHECK(has(out[0].text, "rank 2 of 3 did not arrive within 1.5 s"));
  CHECK(out[1].exitCode == 1);
  CHECK(has(out[1].text, "rank 0 reports: rank 2 of 3 did not arrive"));
  for (const auto& o : out) CHECK(o.seconds < 10);
}

TEST_CASE("rendezvous: a world-size mismatch is an error on both sides, naming both sizes") {
  // Without a token the claim is turned away at once and rank 0 says so at its timeout (a
  // stranger cannot stop the job, Note [Strangers]); with one, both stop at once.
  for (const std::string token : {"", "t0ken"}) {
    CAPTURE(token);
    const int port = testing::free_port();
    const auto out = testing::run_ranks(
        2,
        [&](int r) {
          WorldInfo w = world(r, r == 0 ? 2 : 3, port);
          w.token = token;
          Rendezvous::join(w, {}, "id", 2);
          return std::string("(no error)");
        },
        30);
    INFO(describe(out));
    for (const auto& o : out) {
      CHECK(o.exitCode == 1);
      CHECK(has(o.text, "world size mismatch: rank 0"));
      CHECK(has(o.text, "has WORLD_SIZE=2, rank 1"));
      CHECK(has(o.text, "has WORLD_SIZE=3"));
    }
    CHECK(out[1].seconds < 1.5);  // at once, not at the timeout
    if (token.empty()) {
      CHECK(has(out[0].text, "rank 1 of 2 did not arrive within 2 s"));
      CHECK(has(out[0].text, "turned away meanwhile: world size mismatch"));
    } else {
      CHECK(out[0].seconds < 1.5);
    }
  }
}

TEST_CASE("rendezvous: the same rank twice, and one GPU for two ranks, are errors") {
  for (const std::string token : {"", "t0ken"}) {
    CAPTURE(token);
    const int port = testing::free_port();
    auto out = testing::run_ranks(
        3,
        [&](int r) {  // ranks 0, 1, 1 of 3
          std::this_thread::sleep_for(std::chrono::milliseconds(r == 2 ? 300 : 0));
          WorldInfo w = world(r == 0 ? 0 : 1, 3, port);
          w.token = token;
          Rendezvous::join(w, gpu("gpu" + std::to_string(r)), "id", 2);
          return std::string("(no error)");
        },
        30);
    INFO(describe(out));
    for (const auto& o : out) {
      CHECK(o.exitCode == 1);
      CHECK(has(o.text, "rank 1 arrived twice"));
    }
    CHECK(out[2].seconds < 1.5);  // the second claimant hears it at once
    if (!token.empty()) {
      for (const auto& o : out) CHECK(o.seconds < 1.5);
    } else {
      CHECK(has(out[0].text, "rank 2 of 3 did not arrive within 2 s"));  // the first rank 1 was not shut out
    }
  }
  const int port2 = testing::free_port();
  auto out = testing::run_ranks(
      2,
      [&](int r) {  // one UUID, numbered differently by CUDA_VISIBLE_DEVICES
        Rendezvous::join(world(r, 2, port2), {"GPU-1234", "GPU-1234 (cuda:" + std::to_string(r) + ")"}, "id", 2);
        return std::string("(no error)");
      },
      30);
  INFO(describe(out));
  for (const auto& o : out) {
    CHECK(o.exitCode == 1);
    CHECK(has(o.text, "one GPU on host"));
    CHECK(has(o.text, "is used by rank 0 (GPU-1234 (cuda:0)) and rank 1 (GPU-1234 (cuda:1))"));
  }
  const int port3 = testing::free_port();  // distinct GPUs are fine
  out = testing::run_ranks(
      2,
      [&](int r) {
        Rendezvous::join(world(r, 2, port3), {"GPU-" + std::to_string(r), "GPU-" + std::to_string(r) + " (cuda:0)"},
                         "id", 10);
        return std::string("met");
      },
      30);
  INFO(describe(out));
  for (const auto& o : out) CHECK(o.text == "met");
}

TEST_CASE("rendezvous: a port already taken is named") {
  const int port = testing::free_port();
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(s, 1) == 0);
  const std::string e = testing::error_of([&] { Rendezvous::join(world(0, 2, port), {}, "id", 1); });
  ::close(s);
  CHECK(has(e, "cannot listen on 127.0.0.1 port " + std::to_string(port)));
  CHECK(has(e, "Address already in use"));
}

TEST_CASE("rendezvous: a rank that exits after the meeting is seen by rank 0, whose abort reaches the rest") {
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      3,
      [&](int r) {
        auto rv = Rendezvous::join(world(r, 3, port), {}, "id", 20);
        if (r == 2) ::_exit(7);  // dies without a word
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        std::string lost;
        while (lost.empty() && std::chrono::steady_clock::now() < deadline) {
          const dist::PeerStatus status = rv->lostPeer();
          lost = status.str();
          if (status.lost() && r == 0 &&
              (status.state != dist::PeerStatus::State::Exited || status.rank != 2 || !status.seenByRank0)) {
            lost = "wrong status: " + lost;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (r == 0 && !lost.empty()) rv->abort("stopping: " + lost);
        return lost.empty() ? std::string("nothing seen") : lost;
      },
      30);
  INFO(describe(out));
  CHECK(out[2].exitCode == 7);
  CHECK(out[0].text == "rank 2 exited (its connection to rank 0 closed)");
  CHECK(out[1].text == "rank 0 aborted: stopping: rank 2 exited (its connection to rank 0 closed)");
  CHECK(out[0].seconds < 5);
  CHECK(out[1].seconds < 5);
}

TEST_CASE("rendezvous: a barrier that a rank never reaches fails within its timeout") {
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      2,
      [&](int r) {
        auto rv = Rendezvous::join(world(r, 2, port), {}, "id", 20);
        if (r == 1) {
          std::this_thread::sleep_for(std::chrono::seconds(3));  // late, but alive
          return std::string("late");
        }
        rv->barrier(1.0);
        return std::string("(no error)");
      },
      30);
  INFO(describe(out));
  CHECK(out[0].exitCode == 1);
  CHECK(has(out[0].text, "barrier: rank 1 did not reach the barrier within 1 s"));
  CHECK(out[0].seconds < 3);
}

TEST_CASE("rendezvous: a silent connection does not hold rank 0; a foreign frame does not stop the job") {
  for (const std::string stranger : {"silent", "foreign frame", "oversized frame"}) {
    CAPTURE(stranger);
    const int port = testing::free_port();
    const auto out = testing::run_ranks(
        3,
        [&](int r) {
          if (r == 2) {  // the stranger: first in, then silent or speaking nonsense
            const int fd = raw_connect(port);
            if (stranger == "foreign frame") raw_send(fd, "GET / HTTP/1.0\r\n\r\n");
            if (stranger == "oversized frame") raw_send(fd, std::string(100000, 'x'));
            std::this_thread::sleep_for(std::chrono::seconds(3));
            return std::string("stranger done");
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(r == 1 ? 500 : 0));
          auto rv = Rendezvous::join(world(r, 2, port), {}, "id", 20);
          return rv->payload() == "id" ? std::string("met") : std::string("wrong payload");
        },
        30);
    INFO(describe(out));
    CHECK(out[0].text == "met");
    CHECK(out[1].text == "met");
    CHECK(out[0].seconds < 2.5);  // not the stranger's 3 s, nor the 20 s timeout
    CHECK(out[1].seconds < 2.5);
  }
}

TEST_CASE("rendezvous: a stranger claiming a taken rank is turned away; the job goes on") {
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      4,
      [&](int r) {  // ranks 0, 1, 2 of 3 and a stranger claiming rank 1 after the real one
        std::this_thread::sleep_for(std::chrono::milliseconds(r == 3 ? 300 : r == 2 ? 800 : 0));
        auto rv = Rendezvous::join(world(r == 3 ? 1 : r, 3, port), {}, r == 0 ? "id" : "", 20);
        rv->barrier(20);
        return rv->payload() == "id" ? std::string("met") : std::string("wrong payload");
      },
      30);
  INFO(describe(out));
  for (int r = 0; r < 3; ++r) CHECK(out[r].text == "met");
  CHECK(out[3].exitCode == 1);
  CHECK(has(out[3].text, "rank 0 reports: rank 1 arrived twice"));
  CHECK(out[3].seconds < 2);
}

TEST_CASE("rendezvous: with CUDNN_NN_DIST_TOKEN, a peer gets nothing before it proves the token") {
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      4,
      [&](int r) {
        if (r == 2) {  // first in, claims rank 1 with a made-up proof: must not get the payload
          const int fd = raw_connect(port);
          const std::string challenge = raw_recv(fd);
          raw_send(fd, "cudnn-nn rendezvous 2\n1\n2\nabcd\n" + std::string(64, '0') + "\nhost\n\n");
          const std::string reply = raw_recv(fd);
          return "challenge: " + challenge.substr(0, 21) + (has(challenge, "\ntoken") ? " (token)" : "") +
                 "; reply: " + reply;
        }
        if (r == 3) {  // the wrong token, through the library
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          WorldInfo w = world(1, 2, port);
          w.token = "guess";
          Rendezvous::join(w, {}, "", 20);
          return std::string("(no error)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(r == 1 ? 600 : 0));
        WorldInfo w = world(r, 2, port);
        w.token = "the shared secret";
        auto rv = Rendezvous::join(w, {}, r == 0 ? "nccl id" : "", 20);
        return rv->payload() == "nccl id" ? std::string("met") : std::string("wrong payload");
      },
      30);
  INFO(describe(out));
  CHECK(out[0].text == "met");
  CHECK(out[1].text == "met");
  CHECK(has(out[2].text, "challenge: cudnn-nn rendezvous 2 (token)"));
  CHECK(has(out[2].text, "reply: error\nthe proof of CUDNN_NN_DIST_TOKEN does not match"));
  CHECK_FALSE(has(out[2].text, "nccl id"));
  CHECK(out[3].exitCode == 1);
  CHECK(has(out[3].text, "rank 0 reports: the proof of CUDNN_NN_DIST_TOKEN does not match"));
  // A token on one side only is named on the side that has to stop.
  const int port2 = testing::free_port();
  const auto half = testing::run_ranks(
      2,
      [&](int r) {
        WorldInfo w = world(r, 2, port2);
        if (r == 1) w.token = "mine";
        Rendezvous::join(w, {}, "id", 2);
        return std::string("(no error)");
      },
      30);
  INFO(describe(half));
  CHECK(has(half[1].text, "rank 0 does not ask for CUDNN_NN_DIST_TOKEN, which this rank has"));
  CHECK(half[1].seconds < 1.5);
}

TEST_CASE("rendezvous: rank 0 listens on MASTER_ADDR only") {
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      2,
      [&](int r) {
        WorldInfo w = world(r, 2, port);
        w.masterAddr = "127.0.0.2";  // a loopback address other than 127.0.0.1
        std::string other;
        if (r == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          const int fd = raw_connect(port, 0.1, "127.0.0.1");
          other = fd < 0 ? "refused on 127.0.0.1; " : "accepted on 127.0.0.1; ";
          if (fd >= 0) ::close(fd);
        }
        Rendezvous::join(w, {}, "id", 20);
        return other + "met";
      },
      30);
  INFO(describe(out));
  CHECK(out[0].text == "met");
  CHECK(out[1].text == "refused on 127.0.0.1; met");
}

TEST_CASE("rendezvous: name resolution is under the timeout; absurd timeouts are refused") {
  dist::detail::set_resolver([](const std::string&, std::vector<uint32_t>& out) {
    std::this_thread::sleep_for(std::chrono::seconds(4));
    out.push_back(htonl(INADDR_LOOPBACK));
    return std::string();
  });
  const auto start = std::chrono::steady_clock::now();
  const std::string e = testing::error_of([&] { Rendezvous::join(world(1, 2, testing::free_port()), {}, "", 0.5); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  dist::detail::set_resolver(nullptr);
  CHECK(has(e, "resolving MASTER_ADDR '127.0.0.1' did not finish within 0.5 s"));
  CHECK(took < 2);
  for (double t : {1e10, 1e300, -1.0, 0.0}) {
    CAPTURE(t);
    CHECK(has(testing::error_of([&] { Rendezvous::join(world(1, 2, 1), {}, "", t); }),
              "expected a timeout of finite seconds in (0, 1e7]"));
  }
}
