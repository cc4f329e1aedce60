// The rendezvous as several processes on this machine (no GPU): the meeting, the barrier, and
// every failure it must turn into a clear error within a bounded time.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <thread>

#include "cudnn/dist/Rendezvous.h"
#include "tests/support/ErrorText.h"
#include "tests/dist/Ranks.h"

using cudnn::dist::Rendezvous;
using cudnn::dist::WorldInfo;
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
        auto rv = Rendezvous::join(world(r, 4, port), "gpu" + std::to_string(r), r == 0 ? payload : "", 20);
        rv->barrier(20);
        const std::string lost = rv->lostPeer();  // nobody leaves before all pass the next barrier
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
  auto rv = Rendezvous::join(world(0, 1, 1), "", "id", 1);
  CHECK(rv->payload() == "id");
  rv->barrier(1);
  CHECK(rv->lostPeer().empty());
}

TEST_CASE("rendezvous: an unreachable rank 0 is an error naming the address, after the timeout") {
  const int port = testing::free_port();
  const auto start = std::chrono::steady_clock::now();
  const std::string e = testing::error_of([&] { Rendezvous::join(world(1, 2, port), "", "", 1.0); });
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
  const std::string e = testing::error_of([&] { Rendezvous::join(w, "", "", 1.0); });
  CHECK(has(e, "cannot resolve MASTER_ADDR 'no-such-host.invalid'"));
}

TEST_CASE("rendezvous: a rank that never arrives stops the others with an error naming it") {
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      2,
      [&](int r) {  // ranks 0 and 1 of 3; rank 2 never comes
        Rendezvous::join(world(r, 3, port), "", "id", 1.5);
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
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      2,
      [&](int r) {
        Rendezvous::join(world(r, r == 0 ? 2 : 3, port), "", "id", 10);
        return std::string("(no error)");
      },
      30);
  INFO(describe(out));
  for (const auto& o : out) {
    CHECK(o.exitCode == 1);
    CHECK(has(o.text, "world size mismatch: rank 0"));
    CHECK(has(o.text, "has WORLD_SIZE=2, rank 1"));
    CHECK(has(o.text, "has WORLD_SIZE=3"));
    CHECK(o.seconds < 5);  // at once, not at the timeout
  }
}

TEST_CASE("rendezvous: the same rank twice, and one GPU for two ranks, are errors") {
  const int port = testing::free_port();
  auto out = testing::run_ranks(
      3,
      [&](int r) {  // ranks 0, 1, 1 of 3
        std::this_thread::sleep_for(std::chrono::milliseconds(r == 2 ? 300 : 0));
        Rendezvous::join(world(r == 0 ? 0 : 1, 3, port), "gpu" + std::to_string(r), "id", 10);
        return std::string("(no error)");
      },
      30);
  INFO(describe(out));
  for (const auto& o : out) {
    CHECK(o.exitCode == 1);
    CHECK(has(o.text, "rank 1 arrived twice"));
    CHECK(o.seconds < 5);
  }
  const int port2 = testing::free_port();
  out = testing::run_ranks(
      2,
      [&](int r) {  // one UUID, numbered differently by CUDA_VISIBLE_DEVICES
        Rendezvous::join(world(r, 2, port2), "GPU-1234 (cuda:" + std::to_string(r) + ")", "id", 10);
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
        Rendezvous::join(world(r, 2, port3), "GPU-" + std::to_string(r) + " (cuda:0)", "id", 10);
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
  const std::string e = testing::error_of([&] { Rendezvous::join(world(0, 2, port), "", "id", 1); });
  ::close(s);
  CHECK(has(e, "cannot listen on port " + std::to_string(port)));
  CHECK(has(e, "Address already in use"));
}

TEST_CASE("rendezvous: a rank that exits after the meeting is seen by rank 0, whose abort reaches the rest") {
  const int port = testing::free_port();
  const auto out = testing::run_ranks(
      3,
      [&](int r) {
        auto rv = Rendezvous::join(world(r, 3, port), "", "id", 20);
        if (r == 2) ::_exit(7);  // dies without a word
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        std::string lost;
        while (lost.empty() && std::chrono::steady_clock::now() < deadline) {
          lost = rv->lostPeer();
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
        auto rv = Rendezvous::join(world(r, 2, port), "", "id", 20);
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
