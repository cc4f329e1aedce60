// test_Memory.cpp: the GPU memory paths. Out of memory under tensor::cuda::set_memory_limit:
// the error names the request, the device, its free and total memory and the allocator's
// bytes; a training step that fails in the forward pass or in the optimizer step leaves the
// parameters and the optimizer state as they were, and after the limit is raised the same
// network trains to the bit-identical result of a twin that never failed. Teardown:
// tensor::cuda::shutdown() releases the cuDNN/cuBLAS handles, workspaces and cached blocks,
// tensors alive across it stay valid, and the library works again after it.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "cudnn/CrossEntropyCriterion.h"
#include "cudnn/Linear.h"
#include "cudnn/ReLU.h"
#include "cudnn/SpatialConvolution.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "nn/Adam.h"
#include "nn/Sequential.h"
#include "tensor/Cuda.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);

std::shared_ptr<nn::Sequential> make_net() {
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<cudnn::Linear>(64, 256));
  net->add(std::make_shared<cudnn::ReLU>());
  net->add(std::make_shared<cudnn::Linear>(256, 10));
  return net;
}

struct Trainer {
  std::shared_ptr<nn::Sequential> net = make_net();
  cudnn::CrossEntropyCriterion criterion;
  std::unique_ptr<nn::Adam> opt;

  explicit Trainer(const std::map<std::string, Tensor>& state) {
    net->loadStateDict(state);
    net->to(gpu);
    criterion.to(gpu);
    opt = std::make_unique<nn::Adam>(*net, 1e-2);
  }
  void forward_backward(const Tensor& x, const Tensor& t) {
    opt->zeroGrad();
    const Tensor& y = net->forward(x);
    criterion.forward(y, t);
    net->backward(x, criterion.backward(y, t));
  }
  void step(const Tensor& x, const Tensor& t) {
    forward_backward(x, t);
    opt->step();
  }
};

// Each tensor of `state` bit-identical to `before`'s (both on any device).
void expect_same_state(const std::map<std::string, Tensor>& state, const std::map<std::string, Tensor>& before) {
  REQUIRE(state.size() == before.size());
  for (const auto& [name, t] : state) {
    INFO(name);
    CHECK(max_abs_diff(t.cpu(), before.at(name).cpu()) == 0);
  }
}

std::map<std::string, Tensor> cpu_copy(const std::map<std::string, Tensor>& state) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : state) out[name] = t.cpu().clone();
  return out;
}

// Runs f, which must throw tensor::Error for lack of memory; returns the message.
template <class F>
std::string oom_message(F&& f) {
  std::string message;
  try {
    f();
  } catch (const tensor::Error& e) {
    message = e.what();
  }
  INFO("message: ", message);
  CHECK(message.find("tensor::cuda::allocate: out of memory on cuda:0: cannot allocate ") != std::string::npos);
  CHECK(message.find(" free of ") != std::string::npos);
  CHECK(message.find("after releasing ") != std::string::npos);
  CHECK(message.find("(tensor::cuda::set_memory_limit)") != std::string::npos);
  return message;
}

// Clears the limit however a test case ends.
struct LimitGuard {
  ~LimitGuard() { cuda::set_memory_limit(0, 0); }
};
}  // namespace

TEST_CASE(
    "out of memory: a clear error, a training step that fails changes nothing, and it trains after the limit is "
    "raised") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  LimitGuard guard;
  Generator gen(8101);
  const auto initial = make_net()->stateDict();
  const Tensor x = uniform({32, 64}, -1, 1, gen).to(gpu);
  const Tensor t =
      tensor::from_vector<int64_t>(
          {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}, {32})
          .to(gpu);
  Trainer ok(initial), failing(initial);
  for (int k = 0; k < 2; ++k) ok.step(x, t);  // the reference: two steps, no limit

  // 1. a limit that the forward pass cannot fit in
  cuda::empty_cache();
  const auto before = cpu_copy(failing.net->stateDict());
  cuda::set_memory_limit(cuda::memory_stats(0).allocated_bytes + 1024, 0);
  CHECK(cuda::memory_limit(0) == cuda::memory_stats(0).allocated_bytes + 1024);
  oom_message([&] { failing.step(x, t); });
  expect_same_state(failing.net->stateDict(), before);
  CHECK(failing.opt->stateDict().empty());

  // 2. room for forward and backward, not for Adam's first step (two moments and a
  // temporary per parameter): it fails part-way through making its buffers
  cuda::set_memory_limit(0, 0);
  failing.forward_backward(x, t);
  cuda::empty_cache();
  size_t param_bytes = 0;
  for (const Tensor& p : failing.net->parameters()) param_bytes += static_cast<size_t>(p.numel()) * 4;
  cuda::set_memory_limit(cuda::memory_stats(0).allocated_bytes + param_bytes, 0);
  oom_message([&] { failing.opt->step(); });
  expect_same_state(failing.net->stateDict(), before);
  CHECK(failing.opt->stateDict().empty());  // no moment, no step counter

  // 3. the limit raised: the same two steps give the reference's parameters and state, bit for bit
  cuda::set_memory_limit(0, 0);
  for (int k = 0; k < 2; ++k) failing.step(x, t);
  expect_same_state(failing.net->stateDict(), ok.net->stateDict());
  expect_same_state(failing.opt->stateDict(), ok.opt->stateDict());
}

TEST_CASE("out of memory: a request beyond the device's memory names its size and the device's free memory") {
  const std::string message = [] {
    try {
      (void)tensor::empty({int64_t{1} << 40}, DType::Float32, gpu);  // 4 TiB
    } catch (const tensor::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  INFO("message: ", message);
  CHECK(message.find("out of memory on cuda:0: cannot allocate 4398046511104 bytes (4.00 TiB); the device has ") !=
        std::string::npos);
  CHECK(message.find("(tensor::cuda::set_memory_limit)") == std::string::npos);  // no limit was set
  // the allocator still works
  CHECK(max_abs_diff(tensor::ones({4}, DType::Float32, gpu).cpu(), tensor::ones({4})) == 0);
}

TEST_CASE("tensor::cuda::shutdown releases handles, workspaces and cached blocks; tensors stay valid; work resumes") {
  Generator gen(8102);
  cudnn::SpatialConvolution conv(3, 8, 3, 3);
  conv.to(gpu);
  const Tensor x = uniform({2, 3, 9, 9}, -1, 1, gen).to(gpu);
  const Tensor y0 = conv.forward(x).clone();
  { const Tensor scratch = zeros({1 << 20}, DType::Float32, gpu); }  // a cached block
  CHECK(cudnn::handle() != nullptr);

  cuda::shutdown();
  const auto stats = cuda::memory_stats(0);
  CHECK(stats.reserved_bytes == stats.allocated_bytes);  // nothing cached: only live tensors hold memory
  CHECK(cudnn::workspace_size() == 0);                   // a new handle, no workspace yet
  CHECK(max_abs_diff(conv.forward(x), y0) == 0);         // same weights, same result
  cuda::shutdown();
  cuda::shutdown();  // idempotent
  CHECK(max_abs_diff(conv.forward(x), y0) == 0);
}
