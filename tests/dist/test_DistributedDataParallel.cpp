// DistributedDataParallel at world size 1 on one GPU: exactly the network's own training,
// for every bucket size (one parameter per bucket up to one bucket for all), so the bucket,
// copy, all-reduce and hook path changes no bit; and its errors.
#include <doctest/doctest.h>

#include "cudnn/core/Config.h"
#include "cudnn/dist/Dist.h"
#include "cudnn/dist/DistributedDataParallel.h"
#include "tests/support/ErrorText.h"
#include "tests/dist/Training.h"

using cudnn::dist::DistributedDataParallel;
using testing::has;

namespace {
const tensor::Device gpu = tensor::Device::cuda(0);

std::shared_ptr<cudnn::dist::ProcessGroup> single_group() {
  cudnn::dist::WorldInfo w;  // rank 0 of 1: no peer, no port
  return cudnn::dist::init(w, 60);
}
}  // namespace

TEST_CASE("DDP: world size 1 trains exactly as the network alone, for bucket sizes from one parameter to all") {
  cudnn::ScopedConfig deterministic("deterministic=true");
  auto group = single_group();
  CHECK(group->worldSize() == 1);
  CHECK(cudnn::dist::rank() == 0);
  CHECK(cudnn::dist::world_size() == 1);
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
    auto ddp = std::make_shared<DistributedDataParallel>(wrapped, options, group);
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
  auto group = single_group();
  auto alone = testing::small_convnet(6, gpu);
  auto wrapped = testing::small_convnet(6, gpu);
  {
    DistributedDataParallel ddp(wrapped, group);
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
  auto group = single_group();
  auto cpuNet = std::make_shared<nn::Sequential>();
  cpuNet->add(std::make_shared<nn::Linear>(3, 2));
  CHECK(has(testing::error_of([&] { DistributedDataParallel ddp(cpuNet, group); }),
            "expected parameter '0.weight' and its gradient contiguous on cuda:0"));
  auto shared = testing::small_convnet(1, gpu, false);
  auto twice = std::make_shared<nn::Sequential>();
  twice->add(shared);
  twice->add(shared);
  CHECK(has(testing::error_of([&] { DistributedDataParallel ddp(twice, group); }), "shared modules are not supported"));
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
  single_group();
  tensor::Tensor t = tensor::arange(6, tensor::DType::Float32, gpu);
  cudnn::dist::all_reduce(t);
  cudnn::dist::broadcast(t, 0);
  cudnn::dist::barrier();
  CHECK(tensor::max_abs_diff(t.cpu(), tensor::arange(6)) == 0);
  CHECK(has(testing::error_of([&] { cudnn::dist::broadcast(t, 1); }), "expected a root rank in [0, 1), got 1"));
  tensor::Tensor onCpu = tensor::zeros({2});
  CHECK(has(testing::error_of([&] { cudnn::dist::all_reduce(onCpu); }), "expected a contiguous tensor on cuda:0"));
}
