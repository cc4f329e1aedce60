// Multi-GPU data parallelism: DistributedDataParallel over 2 processes and DataParallelTable
// over 2 GPUs against single-GPU training on the same global batch (float32 summation-order
// tolerance), and a killed rank stopping the other with an error within a bounded time.
// Needs 2 visible GPUs: below that the executable exits 77 (SKIP), never counted as passed.
// The 2-process cases re-run this executable as workers (--worker NAME) under the
// environment scripts/launch sets, so each worker starts CUDA fresh.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cudnn/core/Config.h"
#include "distributed/DataParallelTable.h"
#include "distributed/Dist.h"
#include "distributed/DistributedDataParallel.h"
#include "tests/dist/Ranks.h"
#include "tests/dist/Training.h"

namespace {

std::string self_exe;

// Global batch of 32 rows, 3 steps, no batch norm (its statistics depend on the split).
constexpr int kSteps = 3;
constexpr int64_t kRows = 32;
constexpr double kTolerance = 1e-4;  // relative, float32 summation order

int worker_ddp() {
  auto group = dist::init();
  const int r = group->rank(), n = group->worldSize();
  const tensor::Device dev = group->device();
  auto net = testing::small_convnet(11, dev, false);
  dist::DistributedDataParallel ddp(net);
  testing::train(ddp, dev, kSteps, kRows, r * (kRows / n), kRows / n);
  if (r != 0) return 0;
  auto alone = testing::small_convnet(11, dev, false);
  testing::train(*alone, dev, kSteps, kRows, 0, kRows);
  const double diff = testing::state_diff(*alone, *net, true);
  std::printf("rank 0: DDP over %d processes vs one GPU, max relative difference %g\n", n, diff);
  return diff < kTolerance ? 0 : 1;
}

int worker_killed() {
  auto group = dist::init();
  const tensor::Device dev = group->device();
  auto net = testing::small_convnet(12, dev, false);
  dist::DistributedDataParallel ddp(net);
  testing::train(ddp, dev, 1, kRows, 0, kRows / 2);
  // backward() does not wait for its all-reduce: both ranks finish the first step (and meet)
  // before rank 1 dies, so rank 0 loses its peer in the training below, not in this step.
  group->wait(nullptr, "the first step");
  group->barrier();
  if (group->rank() == 1) ::raise(SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  try {
    testing::train(ddp, dev, 1000, kRows, 0, kRows / 2);
  } catch (const tensor::Error& e) {
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank 0 stopped after %.1f s: %s\n", took, e.what());
    return std::strstr(e.what(), "rank 1") && took < 60 ? 0 : 1;
  }
  std::printf("rank 0 trained on without its peer\n");
  return 1;
}

// Runs this executable as `n` ranks of worker `name`; returns their exit codes and output.
std::vector<testing::RankOutcome> launch(const std::string& name, int n, double limit) {
  const int port = testing::free_port();
  return testing::run_ranks(
      n,
      [&](int r) -> std::string {
        const std::string env[] = {"RANK=" + std::to_string(r),       "WORLD_SIZE=" + std::to_string(n),
                                   "LOCAL_RANK=" + std::to_string(r), "LOCAL_WORLD_SIZE=" + std::to_string(n),
                                   "MASTER_ADDR=127.0.0.1",           "MASTER_PORT=" + std::to_string(port),
                                   "CUDNN_NN_DIST_TIMEOUT=30",        "NCCL_NVLS_ENABLE=0"};
        for (const auto& e : env) ::putenv(const_cast<char*>(strdup(e.c_str())));
        ::execl(self_exe.c_str(), self_exe.c_str(), "--worker", name.c_str(), static_cast<char*>(nullptr));
        return "exec failed";
      },
      limit);
}

}  // namespace

TEST_CASE("DDP over 2 processes equals one GPU on the same global batch") {
  const auto out = launch("ddp", 2, 240);
  for (size_t i = 0; i < out.size(); ++i) {
    INFO("rank " << i << " exit " << out[i].exitCode);
    CHECK(out[i].exitCode == 0);
  }
}

TEST_CASE("a killed rank stops the other with an error naming it, within a bounded time") {
  const auto out = launch("killed", 2, 240);
  CHECK(out[1].exitCode == 128 + SIGKILL);
  CHECK(out[0].exitCode == 0);
  CHECK(out[0].seconds < 120);
}

TEST_CASE("DataParallelTable over 2 GPUs equals one GPU on the same global batch") {
  cudnn::ScopedConfig deterministic("deterministic=true");
  const tensor::Device gpu = tensor::Device::cuda(0);
  auto alone = testing::small_convnet(13, gpu, false);
  auto net = testing::small_convnet(13, gpu, false);
  auto dpt = std::make_shared<dist::DataParallelTable>(net, std::vector<int>{0, 1});
  testing::train(*alone, gpu, kSteps, kRows, 0, kRows);
  testing::train(*dpt, gpu, kSteps, kRows, 0, kRows);
  CHECK(testing::state_diff(*alone, *net, true) < kTolerance);
  dpt->syncParameters();
  CHECK(testing::state_diff(dpt->replica(0), dpt->replica(1)) == 0);
}

int main(int argc, char** argv) {
  self_exe = "/proc/self/exe";
  char buf[4096];
  const ssize_t len = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (len > 0) self_exe.assign(buf, static_cast<size_t>(len));
  if (argc == 3 && std::string(argv[1]) == "--worker") {
    try {
      const std::string name = argv[2];
      return name == "ddp" ? worker_ddp() : name == "killed" ? worker_killed() : 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "worker %s: %s\n", argv[2], e.what());
      return 1;
    }
  }
  const int gpus = tensor::cuda::device_count();
  if (gpus < 2) {
    std::printf("SKIP: the multi-GPU tests need 2 visible GPUs, got %d\n", gpus);
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
