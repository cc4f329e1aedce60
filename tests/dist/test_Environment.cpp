// The launcher's environment: torchrun's variables, Open MPI's, none, and the malformed ones.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>

#include "distributed/Environment.h"
#include "tests/support/ErrorText.h"

using dist::WorldInfo;
using testing::has;

namespace {

WorldInfo from(const std::map<std::string, std::string>& env) {
  return dist::world_from([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string error_from(const std::map<std::string, std::string>& env) {
  return testing::error_of([&] { from(env); });
}

}  // namespace

TEST_CASE("environment: nothing set is a single process") {
  const WorldInfo w = from({});
  CHECK(w.rank == 0);
  CHECK(w.worldSize == 1);
  CHECK(w.localRank == 0);
  CHECK(w.masterAddr == "127.0.0.1");
  CHECK(w.masterPort == 29500);
}

TEST_CASE("environment: torchrun's variables") {
  const WorldInfo w = from({{"RANK", "5"},
                            {"WORLD_SIZE", "8"},
                            {"LOCAL_RANK", "1"},
                            {"LOCAL_WORLD_SIZE", "4"},
                            {"MASTER_ADDR", "node0"},
                            {"MASTER_PORT", "1234"}});
  CHECK(w.rank == 5);
  CHECK(w.worldSize == 8);
  CHECK(w.localRank == 1);
  CHECK(w.localWorldSize == 4);
  CHECK(w.masterAddr == "node0");
  CHECK(w.masterPort == 1234);
  CHECK(has(w.str(), "rank 5 of 8 (local 1 of 4), rendezvous node0:1234"));
}

TEST_CASE("environment: Open MPI's variables, one host needs no MASTER_ADDR") {
  const WorldInfo w = from({{"OMPI_COMM_WORLD_RANK", "1"},
                            {"OMPI_COMM_WORLD_SIZE", "2"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  CHECK(w.rank == 1);
  CHECK(w.worldSize == 2);
  CHECK(w.localRank == 1);
  CHECK(w.masterAddr == "127.0.0.1");
  CHECK(has(w.source, "Open MPI"));
  const std::string e = error_from({{"OMPI_COMM_WORLD_RANK", "1"},
                                    {"OMPI_COMM_WORLD_SIZE", "4"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  CHECK(has(e, "expected MASTER_ADDR (rank 0's host) for a job over several hosts (4 ranks, 2 on this host)"));
  CHECK(has(e, "mpirun -x MASTER_ADDR"));
}

TEST_CASE("environment: malformed or inconsistent values are named") {
  CHECK(has(error_from({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}),
            "expected a rank below the world size 4, got rank 4"));
  CHECK(has(error_from({{"RANK", "x"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}),
            "expected RANK to be an integer in [0, 1048576], got 'x'"));
  CHECK(has(error_from({{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"LOCAL_RANK", "0"}}),
            "expected WORLD_SIZE to be an integer"));
  CHECK(has(error_from({{"RANK", "0"}}), "expected RANK and WORLD_SIZE together, got only RANK"));
  CHECK(has(error_from({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), "expected LOCAL_RANK"));
  CHECK(has(error_from({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "70000"}}),
            "expected MASTER_PORT to be an integer in [1, 65535], got '70000'"));
  CHECK(has(error_from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}),
            "expected the local rank below the local world size 2, got 2"));
}

TEST_CASE("environment: LOCAL_WORLD_SIZE above WORLD_SIZE, Open MPI's size without its rank, launchers that disagree") {
  CHECK(error_from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}}) ==
        "dist::world_from_environment: expected LOCAL_WORLD_SIZE (the ranks on this host) at most WORLD_SIZE=2, got "
        "LOCAL_WORLD_SIZE=4 (torchrun-style variables (RANK, WORLD_SIZE))");
  // Open MPI's, named as Open MPI spells them
  CHECK(has(error_from({{"OMPI_COMM_WORLD_RANK", "0"},
                        {"OMPI_COMM_WORLD_SIZE", "2"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}}),
            "expected OMPI_COMM_WORLD_LOCAL_SIZE (the ranks on this host) at most OMPI_COMM_WORLD_SIZE=2, got "
            "OMPI_COMM_WORLD_LOCAL_SIZE=3"));
  CHECK(has(error_from({{"OMPI_COMM_WORLD_SIZE", "4"}}),
            "expected OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE together, got only OMPI_COMM_WORLD_SIZE=4"));
  CHECK(has(error_from({{"OMPI_COMM_WORLD_RANK", "2"}}), "got only OMPI_COMM_WORLD_RANK=2"));
  CHECK(has(error_from({{"RANK", "1"},
                        {"WORLD_SIZE", "2"},
                        {"LOCAL_RANK", "1"},
                        {"OMPI_COMM_WORLD_RANK", "0"},
                        {"OMPI_COMM_WORLD_SIZE", "2"}}),
            "expected torchrun's and Open MPI's variables to agree, got RANK=1 but OMPI_COMM_WORLD_RANK=0"));
  CHECK(has(error_from({{"RANK", "0"},
                        {"WORLD_SIZE", "2"},
                        {"LOCAL_RANK", "0"},
                        {"OMPI_COMM_WORLD_RANK", "0"},
                        {"OMPI_COMM_WORLD_SIZE", "4"}}),
            "got WORLD_SIZE=2 but OMPI_COMM_WORLD_SIZE=4"));
  // Both, agreeing: fine (torchrun's are read).
  const WorldInfo w = from({{"RANK", "1"},
                            {"WORLD_SIZE", "2"},
                            {"LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_RANK", "1"},
                            {"OMPI_COMM_WORLD_SIZE", "2"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  CHECK(w.rank == 1);
  CHECK(w.worldSize == 2);
}

TEST_CASE("environment: CUDNN_NN_DIST_TOKEN is read, never printed; empty is an error") {
  const WorldInfo w = from({{"CUDNN_NN_DIST_TOKEN", "s3cret"}});
  CHECK(w.token == "s3cret");
  CHECK_FALSE(has(w.str(), "s3cret"));
  CHECK(has(error_from({{"CUDNN_NN_DIST_TOKEN", ""}}), "CUDNN_NN_DIST_TOKEN is set but empty"));
}

TEST_CASE("environment: CUDNN_NN_DIST_TIMEOUT must be finite, > 0 and not absurdly large") {
  auto timeout_with = [](const char* v) {
    ::setenv("CUDNN_NN_DIST_TIMEOUT", v, 1);
    std::string out;
    try {
      out = std::to_string(dist::timeout_from_environment());
    } catch (const tensor::Error& e) {
      out = e.what();
    }
    ::unsetenv("CUDNN_NN_DIST_TIMEOUT");
    return out;
  };
  CHECK(timeout_with("2.5") == std::to_string(2.5));
  CHECK(timeout_with("1e7") == std::to_string(1e7));
  for (const char* bad : {"inf", "-inf", "nan", "1e10", "1e300", "0", "-3"}) {
    CAPTURE(bad);
    const std::string e = timeout_with(bad);
    CHECK(has(e, "expected a timeout of finite seconds in (0, 1e7]"));
    CHECK(has(e, std::string("CUDNN_NN_DIST_TIMEOUT='") + bad + "'"));
  }
  CHECK(has(timeout_with("1e300"), "a deadline that far would overflow the clock"));
  CHECK(has(timeout_with("soon"), "expected CUDNN_NN_DIST_TIMEOUT to be a number of seconds > 0, got 'soon'"));
  CHECK(has(testing::error_of([] { dist::checked_timeout(1e10, "timeoutSeconds=1e10"); }), "got timeoutSeconds=1e10"));
}
