// DistributedDataParallel at world size 1 on one GPU: exactly the network's own training,
// for every bucket size (one parameter per bucket up to one bucket for all), so the bucket,
// copy, all-reduce and hook path changes no bit; and its errors. The group's teardown
// (close(), tensor::cuda::shutdown) and its watchdog (a watched work past the timeout).
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "cudnn/Linear.h"
#include "cudnn/core/Config.h"
#include "distributed/Dist.h"
#include "distributed/DistributedDataParallel.h"
#include "nn/ConvolutionBase.h"
#include "nn/Sequential.h"
#include "tests/dist/Training.h"
#include "tests/support/ErrorText.h"

using dist::DistributedDataParallel;
using testing::has;

namespace {
const tensor::Device gpu = tensor::Device::cuda(0);

// The default group for one test case, rank 0 of 1 (no peer, no port), released at the end
// of the case, as DataParallelTable releases its communicators: no communicator outlives the
// case that made it.
struct SingleGroup {
  std::shared_ptr<dist::ProcessGroup> group;
  SingleGroup() : group(dist::init(dist::WorldInfo{}, 60)) {}
  ~SingleGroup() {
    group.reset();
    dist::destroy();
  }
  dist::ProcessGroup* operator->() const { return group.get(); }
};
}  // namespace

TEST_CASE("DDP: world size 1 trains exactly as the network alone, for bucket sizes from one parameter to all") {
  cudnn::ScopedConfig deterministic("deterministic=true");
  SingleGroup group;
  CHECK(group->worldSize() == 1);
  CHECK(dist::rank() == 0);
  CHECK(dist::world_size() == 1);
  struct Case {
    size_t first, cap;
    size_t buckets;  // expected count (6 parameters: conv, bn, linear weights and biases)
  };
  for (const Case c : {Case{1, 1, 6}, Case{600, 600, 0}, Case{1u << 20, 25u << 20, 1}, Case{SIZE_MAX, SIZE_MAX, 1}}) {
    CAPTURE(c.cap);
    auto alone = testing::small_convnet(5, gpu);
    auto wrapped = testing::small_convnet(5, gpu);
    REQUIRE(testing::state_diff(*alone, *wrapped) == 0);
    DistributedDataParallel::Options options;
    options.firstBucketBytes = c.first;
    options.bucketBytes = c.cap;
    auto ddp = std::make_shared<DistributedDataParallel>(wrapped, options, group.group);
    const auto layout = ddp->bucketLayout();
    if (c.buckets) CHECK(layout.size() == c.buckets);
    CHECK(layout.front().front() == "5.bias");  // reverse module order: the last layer first
    CHECK(layout.back().back() == "0.weight");
    size_t params = 0;
    for (const auto& b : layout) params += b.size();
    CHECK(params == 6);
    const double lossAlone = testing::train(*alone, gpu, 4, 16, 0, 16);
    const double lossDdp = testing::train(*ddp, gpu, 4, 16, 0, 16);
    // Every bucket was launched from a module's backward hook, none left for the end: the
    // communication overlaps the rest of backward.
    CHECK(ddp->bucketsLaunchedInBackward() == layout.size());
    CHECK(lossAlone == lossDdp);
    CHECK(testing::state_diff(*alone, *wrapped) == 0);  // parameters and running statistics, bit for bit
    const auto ga = alone->gradParameters(), gw = wrapped->gradParameters();
    for (size_t i = 0; i < ga.size(); ++i) CHECK(tensor::max_abs_diff(ga[i].cpu(), gw[i].cpu()) == 0);
  }
}

TEST_CASE("DDP: the accGradParameters path averages too, and hooks go with the wrapper") {
  cudnn::ScopedConfig deterministic("deterministic=true");
  SingleGroup group;
  auto alone = testing::small_convnet(6, gpu);
  auto wrapped = testing::small_convnet(6, gpu);
  {
    DistributedDataParallel ddp(wrapped, group.group);
    auto [x, y] = testing::batch(0, 8);
    const tensor::Tensor xs = x.to(gpu);
    const tensor::Tensor g = tensor::ones({8, 10}, tensor::DType::Float32, gpu);
    alone->zeroGradParameters();
    ddp.zeroGradParameters();
    alone->forward(xs);
    alone->backward(xs, g);
    ddp.forward(xs);
    ddp.updateGradInput(xs, g);
    ddp.accGradParameters(xs, g);
    const auto ga = alone->gradParameters(), gw = wrapped->gradParameters();
    for (size_t i = 0; i < ga.size(); ++i) CHECK(tensor::max_abs_diff(ga[i].cpu(), gw[i].cpu()) == 0);
    CHECK(has(ddp.str(), "dist.DistributedDataParallel {\n  (1): " + wrapped->type_name() + " {"));
    CHECK(ddp.bucketsLaunchedInBackward() == 0);  // this path has no hooks: all at the end
  }
  // The wrapper is gone: the network's own backward runs without it.
  auto [x, y] = testing::batch(1, 4);
  const tensor::Tensor xs = x.to(gpu);
  wrapped->forward(xs);
  wrapped->backward(xs, tensor::ones({4, 10}, tensor::DType::Float32, gpu));
}

TEST_CASE("DDP: a network not on the group's GPU, or with a module twice, is refused with its name") {
  SingleGroup group;
  // Parameters on two devices: the first one's (the GPU) is the network's.
  // (nn modules keep their state on the CPU whatever to() says: the first is a twin)
  auto mixed = std::make_shared<nn::Sequential>();
  mixed->add(std::make_shared<cudnn::Linear>(3, 2));
  mixed->add(std::make_shared<nn::Linear>(2, 2));
  mixed->get(0)->to(gpu);
  CHECK(has(testing::error_of([&] { DistributedDataParallel ddp(mixed, group.group); }),
            "expected parameter '1.weight' and its gradient on cuda:0, both row-major or both channels-last"));
  // A CPU network needs the MPI backend (CPU tensors): refused by name without it.
  auto cpuNet = std::make_shared<nn::Sequential>();
  cpuNet->add(std::make_shared<nn::Linear>(3, 2));
  if (!group->backend(tensor::Device::cpu())) {
    CHECK(has(testing::error_of([&] { DistributedDataParallel ddp(cpuNet, group.group); }),
              "expected a backend for the network's device cpu"));
  }
  auto shared = testing::small_convnet(1, gpu, false);
  auto twice = std::make_shared<nn::Sequential>();
  twice->add(shared);
  twice->add(shared);
  CHECK(has(testing::error_of([&] { DistributedDataParallel ddp(twice, group.group); }),
            "shared modules are not supported"));
  // A filter in neither layout the buckets move (a user's field): refused, saying what it is
  auto odd = testing::small_convnet(1, gpu, false);
  auto& conv = dynamic_cast<nn::ConvolutionBase&>(*std::dynamic_pointer_cast<nn::Sequential>(odd)->get(0));
  const tensor::Tensor w = conv.weight;
  conv.weight = w.transpose(2, 3).contiguous().transpose(2, 3);
  const std::string refused = testing::error_of([&] { DistributedDataParallel ddp(odd, group.group); });
  CHECK(has(refused, "expected parameter '0.weight' and its gradient on cuda:0, both row-major or both channels-last"));
  CHECK(has(refused, "(neither row-major nor channels-last) with gradient"));
  conv.weight = w;
  CHECK_NOTHROW(DistributedDataParallel(odd, group.group));
}

TEST_CASE("DDP: channels-last filters train exactly as the network alone, and keep their layout") {
  cudnn::ScopedConfig deterministic("deterministic=true");
  SingleGroup group;
  auto alone = testing::small_convnet(5, gpu);
  auto wrapped = testing::small_convnet(5, gpu);
  alone->to(tensor::MemoryFormat::ChannelsLast);
  wrapped->to(tensor::MemoryFormat::ChannelsLast);
  DistributedDataParallel::Options options;
  options.firstBucketBytes = 1;  // a bucket per parameter: every copy in and out
  options.bucketBytes = 1;
  auto ddp = std::make_shared<DistributedDataParallel>(wrapped, options, group.group);
  CHECK(testing::train(*alone, gpu, 4, 16, 0, 16) == testing::train(*ddp, gpu, 4, 16, 0, 16));
  CHECK(testing::state_diff(*alone, *wrapped) == 0);
  const auto filter = wrapped->parameters().front();
  CHECK(filter.dim() == 4);
  CHECK(!filter.is_contiguous());
  CHECK(filter.is_contiguous(tensor::MemoryFormat::ChannelsLast));
}

TEST_CASE("DDP: bucket assignment") {
  using D = tensor::DType;
  const auto f = DistributedDataParallel::assignBuckets;
  CHECK(f({4, 4, 4}, {D::Float32, D::Float32, D::Float32}, 4, 8) == std::vector<std::vector<size_t>>{{0}, {1, 2}});
  CHECK(f({4, 4, 4}, {D::Float32, D::Float16, D::Float16}, 100, 100) == std::vector<std::vector<size_t>>{{0}, {1, 2}});
  CHECK(f({4, 40, 4}, {D::Float32, D::Float32, D::Float32}, 8, 8) == std::vector<std::vector<size_t>>{{0}, {1}, {2}});
  CHECK(f({}, {}, 8, 8).empty());
}

TEST_CASE("dist: collectives at world size 1 leave values as they are") {
  SingleGroup group;
  tensor::Tensor t = tensor::arange(6, tensor::DType::Float32, gpu);
  dist::all_reduce(t);
  dist::broadcast(t, 0);
  dist::barrier();
  CHECK(tensor::max_abs_diff(t.cpu(), tensor::arange(6)) == 0);
  CHECK(has(testing::error_of([&] { dist::broadcast(t, 1); }), "expected a root rank in [0, 1), got 1"));
  tensor::Tensor onCpu = tensor::ones({2});
  if (group->backend(tensor::Device::cpu())) {  // MPI, rank 0 of 1: CPU tensors go there
    dist::all_reduce(onCpu);
    CHECK(tensor::max_abs_diff(onCpu, tensor::ones({2})) == 0);
  } else {
    CHECK(has(testing::error_of([&] { dist::all_reduce(onCpu); }), "expected a backend for cpu tensors (MPI)"));
  }
}

TEST_CASE("dist: close(), tensor::cuda::shutdown and destroy() release groups; a released group refuses work") {
  {
    SingleGroup group;
    auto ddp = std::make_shared<DistributedDataParallel>(testing::small_convnet(7, gpu, false), group.group);
    tensor::Tensor t = tensor::arange(4, tensor::DType::Float32, gpu);
    group->close();
    group->close();  // twice is fine
    CHECK(group->aborted());
    CHECK(has(testing::error_of([&] { group->allReduce(t); }),
              "dist (rank 0 of 1): allReduce: the process group was aborted: the process group was closed"));
    CHECK(has(testing::error_of([&] {
                ddp->forward(tensor::zeros({2, 3, 8, 8}, tensor::DType::Float32, gpu));
              }),
              "DistributedDataParallel::forward: the process group was aborted"));
  }
  CHECK_FALSE(dist::is_initialized());
  CHECK(dist::rank() == 0);
  // A group the caller still holds is closed by shutdown (before the allocator's cache goes);
  // the default one is released; a new init() makes a working group again.
  auto held = dist::ProcessGroup::create(dist::WorldInfo{}, 60);
  dist::init(dist::WorldInfo{}, 60);
  CHECK(dist::is_initialized());
  tensor::cuda::shutdown();
  CHECK(held->aborted());
  CHECK_FALSE(dist::is_initialized());
  held.reset();
  SingleGroup again;
  tensor::Tensor t = tensor::arange(4, tensor::DType::Float32, gpu);
  dist::all_reduce(t);
  CHECK(tensor::max_abs_diff(t.cpu(), tensor::arange(4)) == 0);
}

TEST_CASE("dist: the watchdog aborts a group whose watched work outlives the timeout; the next call says so") {
  auto group = dist::ProcessGroup::create(dist::WorldInfo{}, 0.2);
  auto* stream = static_cast<cudaStream_t>(group->commStream());
  // A host function that holds the group's stream for 4 s: the watched work is late. The margin
  // between the timeout and the work's end is wide because compute-sanitizer slows the abort.
  REQUIRE(cudaLaunchHostFunc(
              stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(4000)); }, nullptr) ==
          cudaSuccess);
  const auto start = std::chrono::steady_clock::now();
  group->watch(stream, "the slow work");
  while (!group->aborted() && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(group->aborted());
  CHECK(took < 3.0);  // soon after the timeout (and the watchdog's poll), not when the work ends
  tensor::Tensor t = tensor::arange(4, tensor::DType::Float32, gpu);
  const std::string e = testing::error_of([&] { group->allReduce(t); });
  CHECK(has(e,
            "dist (rank 0 of 1): allReduce: the process group was aborted: the slow work did not finish "
            "within the timeout of 0.2 s"));
  CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
}
