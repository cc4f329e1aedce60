// test_Optimizers.cpp: nn::SGD (momentum, dampening, Nesterov, weight decay) and nn::Adam
// on parameters living on the GPU. They are written with tensor operations, so they run
// where the parameters are: several steps on CUDA float32 parameters stay within 1e-6
// (relative) of the same steps on CPU float64 copies, CUDA and CPU give the same bits in
// one dtype, the state lives on the GPU and moves through stateDict, and a cudnn module
// trains with them.
#include <doctest/doctest.h>

#include <functional>

#include "cudnn/Linear.h"
#include "cudnn/core/Config.h"
#include "nn/Adam.h"
#include "nn/Linear.h"
#include "nn/SGD.h"
#include "tensor/Cuda.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);

// Parameters and gradients of a few shapes on one device and dtype, with values from `seed`.
struct Params {
  std::vector<Tensor> p, g;
};
Params make_params(uint64_t seed, Device device, DType dtype) {
  Generator gen(seed);
  Params out;
  for (const Shape& s : {Shape{5, 4}, Shape{4}, Shape{3, 2, 2}, Shape{1}}) {
    out.p.push_back(uniform(s, -1, 1, gen, DType::Float64).to(device, dtype));
    out.g.push_back(zeros(s, dtype, device));
  }
  return out;
}
// Gradient values for step `k`, the same on every device.
void set_grads(Params& ps, int k) {
  Generator gen(1000 + k);
  for (Tensor& g : ps.g) g.copy_(uniform(g.sizes(), -1, 1, gen, DType::Float64));
}

using Make = std::function<std::unique_ptr<nn::Optimizer>(Params&)>;

struct Named {
  const char* name;
  Make make;
};
std::vector<Named> optimizers() {
  return {
      {"SGD", [](Params& ps) { return std::make_unique<nn::SGD>(ps.p, ps.g, 0.1); }},
      {"SGD momentum dampening weight decay",
       [](Params& ps) { return std::make_unique<nn::SGD>(ps.p, ps.g, 0.05, 0.9, 0.1, 1e-2); }},
      {"SGD Nesterov", [](Params& ps) { return std::make_unique<nn::SGD>(ps.p, ps.g, 0.05, 0.9, 0.0, 1e-3, true); }},
      {"Adam", [](Params& ps) { return std::make_unique<nn::Adam>(ps.p, ps.g, 1e-2); }},
      {"Adam weight decay",
       [](Params& ps) { return std::make_unique<nn::Adam>(ps.p, ps.g, 3e-2, 0.8, 0.99, 1e-6, 1e-2); }},
  };
}

constexpr int kSteps = 6;
}  // namespace

TEST_CASE("SGD and Adam on CUDA float32 parameters follow the CPU float64 steps within 1e-6") {
  for (const Named& o : optimizers()) {
    INFO(o.name);
    Params cu = make_params(77, gpu, DType::Float32), ref = make_params(77, Device::cpu(), DType::Float64);
    auto opt_cu = o.make(cu);
    auto opt_ref = o.make(ref);
    for (int k = 0; k < kSteps; ++k) {
      set_grads(cu, k);
      set_grads(ref, k);
      opt_cu->step();
      opt_ref->step();
      for (size_t i = 0; i < cu.p.size(); ++i) {
        INFO("step ", k, " parameter ", i);
        REQUIRE(cu.p[i].is_cuda());
        CHECK(max_rel_error(cu.p[i], ref.p[i]) < 1e-6);
      }
    }
    // the per-parameter state lives with the parameters (step counters stay on the CPU)
    for (const auto& [key, t] : opt_cu->stateDict()) {
      INFO(key);
      const bool counter = key.ends_with(".step");
      CHECK(t.is_cuda() == !counter);
      if (!counter) CHECK(max_rel_error(t, opt_ref->stateDict().at(key)) < 1e-6);
    }
  }
}

TEST_CASE("SGD and Adam give the CPU's bits on the GPU, in float32 and in float64") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const Named& o : optimizers()) {
      INFO(o.name, " in ", name(dt));
      Params cu = make_params(78, gpu, dt), ref = make_params(78, Device::cpu(), dt);
      auto opt_cu = o.make(cu);
      auto opt_ref = o.make(ref);
      for (int k = 0; k < kSteps; ++k) {
        set_grads(cu, k);
        set_grads(ref, k);
        opt_cu->step();
        opt_ref->step();
      }
      for (size_t i = 0; i < cu.p.size(); ++i) CHECK(max_abs_diff(cu.p[i], ref.p[i]) == 0);
    }
  }
}

TEST_CASE("optimizer state moves between devices through stateDict and the steps go on alike") {
  for (const Named& o : optimizers()) {
    INFO(o.name);
    Params cu = make_params(79, gpu, DType::Float64), ref = make_params(79, Device::cpu(), DType::Float64);
    auto opt_cu = o.make(cu);
    auto opt_ref = o.make(ref);
    for (int k = 0; k < 3; ++k) {
      set_grads(cu, k);
      set_grads(ref, k);
      opt_cu->step();
      opt_ref->step();
    }
    // a fresh CPU optimizer on copies of the GPU parameters takes over the GPU state
    Params moved;
    for (size_t i = 0; i < cu.p.size(); ++i) {
      moved.p.push_back(cu.p[i].cpu().clone());
      moved.g.push_back(zeros_like(moved.p.back()));
    }
    auto opt_moved = o.make(moved);
    opt_moved->loadStateDict(opt_cu->stateDict());
    for (const auto& [key, t] : opt_moved->stateDict()) CHECK(t.is_cpu());
    for (int k = 3; k < kSteps; ++k) {
      set_grads(moved, k);
      set_grads(ref, k);
      opt_moved->step();
      opt_ref->step();
    }
    for (size_t i = 0; i < ref.p.size(); ++i) CHECK(max_rel_error(moved.p[i], ref.p[i]) < 1e-14);
  }
}

TEST_CASE("a cudnn module trains with SGD and Adam on the GPU as the nn module does on the CPU") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4301);
  for (bool adam : {false, true}) {
    INFO((adam ? "Adam" : "SGD Nesterov"));
    nn::Linear ref(6, 3);
    ref.to(DType::Float64);
    cudnn::Linear twin(6, 3);
    twin.to(DType::Float64);
    twin.loadStateDict(ref.stateDict());
    twin.to(gpu);  // before the optimizer: to() replaces the parameter tensors
    auto make = [&](nn::Module& m) -> std::unique_ptr<nn::Optimizer> {
      if (adam) return std::make_unique<nn::Adam>(m, 1e-2);
      return std::make_unique<nn::SGD>(m, 0.1, 0.9, 0.0, 0.0, true);
    };
    auto opt_ref = make(ref);
    auto opt_cu = make(twin);
    for (int k = 0; k < 4; ++k) {
      const Tensor x = uniform({5, 6}, -1, 1, gen, DType::Float64), g = uniform({5, 3}, -1, 1, gen, DType::Float64);
      opt_ref->zeroGrad();
      opt_cu->zeroGrad();
      ref.forward(x);
      ref.backward(x, g);
      twin.forward(x.to(gpu));
      twin.backward(x.to(gpu), g.to(gpu));
      opt_ref->step();
      opt_cu->step();
    }
    CHECK(twin.weight.is_cuda());
    CHECK(max_rel_error(twin.weight, ref.weight) < 1e-12);
    CHECK(max_rel_error(twin.bias, ref.bias) < 1e-12);
  }
}
