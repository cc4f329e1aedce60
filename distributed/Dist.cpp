// Dist.cpp: the default group. It is released by a CUDA shutdown hook, never by a static
// destructor (Note [CUDA teardown] in tensor/Cuda.h).
#include "distributed/Dist.h"

#include "tensor/Cuda.h"

namespace dist {

namespace {

std::shared_ptr<ProcessGroup>& slot() {
  static std::shared_ptr<ProcessGroup>* g = new std::shared_ptr<ProcessGroup>();  // never destroyed statically
  return *g;
}

void release_default_group() { slot().reset(); }

}  // namespace

std::shared_ptr<ProcessGroup> init() {
  if (slot()) return slot();
  return init(world_from_environment());
}

std::shared_ptr<ProcessGroup> init(const WorldInfo& world, double timeoutSeconds) {
  if (slot()) return slot();
  slot() = ProcessGroup::create(world, timeoutSeconds);
  tensor::cuda::register_shutdown_hook(&release_default_group);
  return slot();
}

bool is_initialized() { return slot() != nullptr; }

std::shared_ptr<ProcessGroup> default_group() {
  if (!slot()) throw tensor::Error("dist: expected dist::init() first, got no process group");
  return slot();
}

int rank() { return slot() ? slot()->rank() : 0; }
int world_size() { return slot() ? slot()->worldSize() : 1; }

void all_reduce(tensor::Tensor& t, ReduceOp op) {
  auto g = default_group();
  g->allReduce(t, op);
  g->wait(t.device(), "all_reduce");
}

void broadcast(tensor::Tensor& t, int root) {
  auto g = default_group();
  g->broadcast(t, root);
  g->wait(t.device(), "broadcast");
}

void reduce_scatter(const tensor::Tensor& input, tensor::Tensor& output, ReduceOp op) {
  auto g = default_group();
  g->reduceScatter(input, output, op);
  g->wait(input.device(), "reduce_scatter");
}

void all_gather(const tensor::Tensor& input, tensor::Tensor& output) {
  auto g = default_group();
  g->allGather(input, output);
  g->wait(input.device(), "all_gather");
}

void barrier() { default_group()->barrier(); }

void destroy() { slot().reset(); }

}  // namespace dist
