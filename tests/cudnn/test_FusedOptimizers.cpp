// test_FusedOptimizers.cpp: the fused multi-tensor updates of nn::SGD and nn::Adam on CUDA
// parameters (Note [Fused optimizer steps], nn/Optimizer.h; tensor/cuda/MultiTensor.cu) give, bit
// for bit, the per-tensor tensor-op steps on the GPU (fused = false) in float32, float64, float16
// and bfloat16, and the CPU's steps in float32 and float64, over several steps, state included.
// One optimizer holds parameters of one element, around the kernels' 4096-element chunk, more
// than one launch's 48 tensors, an empty one and a strided one (which takes the tensor ops);
// also loaded state (new and resumed buffers, different Adam step counts in one launch),
// parameters sharing memory (which take the tensor ops), several dtypes and the CPU in one
// optimizer, and a steady-state step recorded into a CUDA graph and replayed (so it makes no
// host synchronisation).
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "nn/Adam.h"
#include "nn/AdamW.h"
#include "nn/SGD.h"
#include "tensor/Cuda.h"
#include "tensor/MultiTensor.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);
const DType kAllFloating[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

// Bit-for-bit equality of two tensors of one dtype and shape, on any devices (NaNs included).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return x.numel() == 0 || std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

// Shapes around the kernels' chunk (4096 elements) and table (48 tensors) sizes.
std::vector<Shape> shapes() {
  std::vector<Shape> s = {{1}, {7}, {4095}, {60, 70}, {4096}, {4097}, {3, 5000}, {0}, {2, 3, 8, 9}};
  for (int64_t k = 1; k <= 50; ++k) s.push_back({k});
  return s;
}
constexpr size_t kStrided = 3;  // the [60 x 70] parameter: a transposed view, so the tensor ops
// the [2 x 3 x 8 x 9] parameter and its gradient: channels-last (Module::to(MemoryFormat)), so
// the fused kernels, over flat blocks laid out alike
constexpr size_t kChannelsLast = 8;

struct Params {
  std::vector<Tensor> p, g;
};
// The same values on every device and dtype (drawn in float64 on the CPU, then converted).
Params make_params(Device device, DType dtype, uint64_t seed, bool strided = true) {
  Generator gen(seed);
  Params out;
  const auto all = shapes();
  for (size_t i = 0; i < all.size(); ++i) {
    const Shape& s = all[i];
    if (i == kStrided && strided) {
      const Shape st{s[1], s[0]};
      out.p.push_back(uniform(st, -1, 1, gen, DType::Float64).to(device, dtype).t());
      out.g.push_back(zeros(st, dtype, device).t());
    } else if (i == kChannelsLast && strided) {
      out.p.push_back(uniform(s, -1, 1, gen, DType::Float64).to(device, dtype).contiguous(MemoryFormat::ChannelsLast));
      out.g.push_back(zeros(s, dtype, device).contiguous(MemoryFormat::ChannelsLast));
    } else {
      out.p.push_back(uniform(s, -1, 1, gen, DType::Float64).to(device, dtype));
      out.g.push_back(zeros(s, dtype, device));
    }
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
  std::string name;
  Make make;
};
// Two parameter groups over the list: even indices with the defaults, odd ones with their own
// lr and no weight decay (Note [Parameter groups] in nn/Optimizer.h).
std::vector<nn::ParamGroup> two_groups(Params& ps) {
  std::vector<nn::ParamGroup> groups(2);
  groups[1].lr = 0.02;
  groups[1].weightDecay = 0.0;
  for (size_t i = 0; i < ps.p.size(); ++i) {
    groups[i % 2].params.push_back(ps.p[i]);
    groups[i % 2].grads.push_back(ps.g[i]);
  }
  return groups;
}

// Every valid SGD option combination, Adam with and without weight decay, AdamW, and parameter
// groups.
std::vector<Named> optimizers() {
  std::vector<Named> out;
  for (double momentum : {0.0, 0.9}) {
    for (double dampening : {0.0, 0.1}) {
      for (double weightDecay : {0.0, 1e-2}) {
        for (bool nesterov : {false, true}) {
          if (nesterov && (momentum == 0 || dampening != 0)) continue;
          const nn::SGD::Options o{.lr = 0.05,
                                   .momentum = momentum,
                                   .dampening = dampening,
                                   .weightDecay = weightDecay,
                                   .nesterov = nesterov};
          out.push_back({"SGD momentum " + std::to_string(momentum) + " dampening " + std::to_string(dampening) +
                             " weightDecay " + std::to_string(weightDecay) + (nesterov ? " Nesterov" : ""),
                         [o](Params& ps) { return std::make_unique<nn::SGD>(ps.p, ps.g, o); }});
        }
      }
    }
  }
  out.push_back({"Adam", [](Params& ps) { return std::make_unique<nn::Adam>(ps.p, ps.g, 1e-2); }});
  out.push_back({"Adam weight decay",
                 [](Params& ps) { return std::make_unique<nn::Adam>(ps.p, ps.g, 3e-2, 0.8, 0.99, 1e-6, 1e-2); }});
  out.push_back({"AdamW", [](Params& ps) {
                   return std::make_unique<nn::AdamW>(ps.p, ps.g, nn::AdamW::Options{.lr = 3e-2, .weightDecay = 0.5});
                 }});
  out.push_back({"AdamW groups", [](Params& ps) {
                   return std::make_unique<nn::AdamW>(two_groups(ps), nn::AdamW::Options{.weightDecay = 0.5});
                 }});
  out.push_back({"SGD Nesterov groups", [](Params& ps) {
                   return std::make_unique<nn::SGD>(
                       two_groups(ps),
                       nn::SGD::Options{.lr = 0.05, .momentum = 0.9, .weightDecay = 1e-2, .nesterov = true});
                 }});
  return out;
}

// Parameters and state of two optimizers on the same parameter list: the same bits.
void check_same(const Params& a, const Params& b, const nn::Optimizer& oa, const nn::Optimizer& ob) {
  REQUIRE(a.p.size() == b.p.size());
  for (size_t i = 0; i < a.p.size(); ++i) {
    INFO("parameter ", i, " ", a.p[i].description());
    CHECK(same_bits(a.p[i], b.p[i]));
  }
  const auto sa = oa.stateDict(), sb = ob.stateDict();
  REQUIRE(sa.size() == sb.size());
  for (const auto& [key, t] : sa) {
    INFO("state ", key);
    REQUIRE(sb.count(key));
    if (key.ends_with(".step")) {
      CHECK(t.item() == sb.at(key).item());
    } else {
      CHECK(same_bits(t, sb.at(key)));
    }
  }
}

constexpr int kSteps = 5;

// `work` captured from device 0's stream with the runtime's own calls (no tensor::cuda::Graph, so
// a host synchronisation inside would show as a failed capture): the graph, for the caller to
// instantiate and destroy.
cudaGraph_t capture_raw(const std::function<void()>& work) {
  const auto stream = static_cast<cudaStream_t>(cuda::stream(0));
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  std::string error;
  try {
    work();
  } catch (const std::exception& e) {
    error = e.what();
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  CHECK(error == "");
  REQUIRE(ended == cudaSuccess);
  return graph;
}

size_t node_count(cudaGraph_t graph) {
  size_t nodes = 0;
  REQUIRE(cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess);
  return nodes;
}
}  // namespace

TEST_CASE("fused CUDA optimizer steps give the tensor ops' bits on the GPU, in every floating dtype") {
  for (DType dt : kAllFloating) {
    for (const Named& o : optimizers()) {
      INFO(o.name, " in ", name(dt));
      Params fused = make_params(gpu, dt, 81), ops = make_params(gpu, dt, 81);
      REQUIRE_FALSE(fused.p[kStrided].is_contiguous());
      REQUIRE_FALSE(fused.p[kChannelsLast].is_contiguous());
      REQUIRE(fused.p[kChannelsLast].is_contiguous(MemoryFormat::ChannelsLast));
      const Tensor start = fused.p[4].clone();
      auto opt_fused = o.make(fused);
      auto opt_ops = o.make(ops);
      CHECK(opt_fused->fused);  // the default
      opt_ops->fused = false;
      for (int k = 0; k < kSteps; ++k) {
        INFO("step ", k);
        set_grads(fused, k);
        set_grads(ops, k);
        opt_fused->step();
        opt_ops->step();
        check_same(fused, ops, *opt_fused, *opt_ops);
      }
      CHECK_FALSE(same_bits(fused.p[4], start));  // it moved
    }
  }
}

TEST_CASE("fused CUDA optimizer steps give the CPU's bits in float32 and float64") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const Named& o : optimizers()) {
      INFO(o.name, " in ", name(dt));
      Params cu = make_params(gpu, dt, 82), ref = make_params(Device::cpu(), dt, 82);
      auto opt_cu = o.make(cu);
      auto opt_ref = o.make(ref);
      for (int k = 0; k < kSteps; ++k) {
        set_grads(cu, k);
        set_grads(ref, k);
        opt_cu->step();
        opt_ref->step();
      }
      check_same(cu, ref, *opt_cu, *opt_ref);
      for (const auto& [key, t] : opt_cu->stateDict()) CHECK(t.is_cuda() == !key.ends_with(".step"));
    }
  }
}

TEST_CASE("loaded state: new and resumed momentum buffers, and different Adam step counts, in one launch") {
  for (DType dt : {DType::Float32, DType::Float16}) {
    for (const Named& o : optimizers()) {
      INFO(o.name, " in ", name(dt));
      Params first = make_params(gpu, dt, 83);
      auto opt_first = o.make(first);
      for (int k = 0; k < 2; ++k) {
        set_grads(first, k);
        opt_first->step();
      }
      // every third parameter loses its state (a new buffer, or Adam from step 1); every
      // fourth is at step 7 (Adam's bias corrections differ within the launch)
      std::map<std::string, Tensor> state;
      for (const auto& [key, t] : opt_first->stateDict()) {
        const size_t i = std::stoul(key.substr(0, key.find('.')));
        if (i % 3 == 0) continue;
        state[key] = key.ends_with(".step") && i % 4 == 0 ? scalar_tensor(7, DType::Int64) : t;
      }
      Params fused, ops;
      for (const Tensor& p : first.p) {
        fused.p.push_back(p.clone());
        ops.p.push_back(p.clone());
        fused.g.push_back(zeros_like(p));
        ops.g.push_back(zeros_like(p));
      }
      auto opt_fused = o.make(fused);
      auto opt_ops = o.make(ops);
      opt_ops->fused = false;
      opt_fused->loadStateDict(state);
      opt_ops->loadStateDict(state);
      for (int k = 2; k < 2 + kSteps; ++k) {
        set_grads(fused, k);
        set_grads(ops, k);
        opt_fused->step();
        opt_ops->step();
      }
      check_same(fused, ops, *opt_fused, *opt_ops);
    }
  }
}

TEST_CASE("shared memory (a tensor listed twice, overlapping views), several dtypes and the CPU in one optimizer") {
  for (const Named& o : optimizers()) {
    INFO(o.name);
    auto make = [](uint64_t seed) {
      Generator gen(seed);
      Params ps;
      const Tensor shared = uniform({300}, -1, 1, gen, DType::Float64).to(gpu, DType::Float32);
      // views of one buffer: [0, 60) and [40, 100) overlap (the tensor ops, in order), [100, 150)
      // and [150, 200) only touch (fused)
      const Tensor flat = uniform({200}, -1, 1, gen, DType::Float64).to(gpu, DType::Float32);
      ps.p = {flat.narrow(0, 0, 60),
              flat.narrow(0, 100, 50),
              flat.narrow(0, 40, 60),
              flat.narrow(0, 150, 50),
              shared,
              uniform({5000}, -1, 1, gen, DType::Float64).to(gpu, DType::Float16),
              shared,  // again, with a gradient of its own
              uniform({33}, -1, 1, gen, DType::Float64).to(gpu, DType::BFloat16),
              uniform({40}, -1, 1, gen, DType::Float64).to(gpu, DType::Float64),
              uniform({9}, -1, 1, gen, DType::Float64).to(Device::cpu(), DType::Float32),
              uniform({4100}, -1, 1, gen, DType::Float64).to(gpu, DType::Float32)};
      for (const Tensor& p : ps.p) ps.g.push_back(zeros_like(p));
      return ps;
    };
    Params fused = make(84), ops = make(84);
    auto opt_fused = o.make(fused);
    auto opt_ops = o.make(ops);
    opt_ops->fused = false;
    for (int k = 0; k < kSteps; ++k) {
      set_grads(fused, k);
      set_grads(ops, k);
      opt_fused->step();
      opt_ops->step();
    }
    check_same(fused, ops, *opt_fused, *opt_ops);
  }
}

TEST_CASE("a steady-state fused SGD step records into a CUDA graph (no host synchronisation) and replays") {
  const nn::SGD::Options options{.lr = 0.05, .momentum = 0.9, .weightDecay = 1e-2, .nesterov = true};
  Params graphed = make_params(gpu, DType::Float32, 85, false), eager = make_params(gpu, DType::Float32, 85, false);
  nn::SGD opt_graphed(graphed.p, graphed.g, options), opt_eager(eager.p, eager.g, options);
  set_grads(graphed, 0);
  set_grads(eager, 0);
  opt_graphed.step();  // makes the momentum buffers: later steps allocate nothing
  opt_eager.step();
  set_grads(graphed, 1);
  set_grads(eager, 1);
  cuda::synchronize(0);

  const auto stream = static_cast<cudaStream_t>(cuda::stream(0));
  cudaGraph_t graph = capture_raw([&] { opt_graphed.step(); });
  CHECK(node_count(graph) == 2);  // 58 non-empty parameters: two launches of at most 48 tensors
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  for (int k = 0; k < 3; ++k) {
    REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
    opt_eager.step();
  }
  cuda::synchronize(0);
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  check_same(graphed, eager, opt_graphed, opt_eager);
}

TEST_CASE("zeroGrad: every gradient +0 (NaN, -0 and Inf too), fused or not, strided and channels-last ones as well") {
  for (DType dt : kAllFloating) {
    INFO(name(dt));
    for (bool fused : {true, false}) {
      INFO("fused ", fused);
      Params ps = make_params(gpu, dt, 83);
      ps.p.push_back(zeros({3}, DType::Float32, Device::cpu()));  // another device and dtype in the list
      ps.g.push_back(zeros({3}, DType::Float32, Device::cpu()));
      nn::SGD sgd(ps.p, ps.g, 0.1);
      sgd.fused = fused;
      set_grads(ps, 0);
      ps.g[0].fill_(std::nan(""));
      ps.g[1].fill_(-0.0);
      ps.g[2].fill_(-INFINITY);
      ps.g.back().fill_(std::nan(""));
      sgd.zeroGrad();
      for (size_t i = 0; i < ps.g.size(); ++i) {
        INFO("gradient ", i, " ", ps.g[i].description());
        CHECK(same_bits(ps.g[i], zeros(ps.g[i].sizes(), ps.g[i].dtype())));
      }
      CHECK(ps.g[kChannelsLast].is_contiguous(MemoryFormat::ChannelsLast));
    }
  }
  // captured: 58 non-empty gradients of one dtype, two launches of at most 48 tensors
  Params ps = make_params(gpu, DType::Float16, 84, false);
  nn::SGD sgd(ps.p, ps.g, 0.1);
  cuda::synchronize(0);
  const auto stream = static_cast<cudaStream_t>(cuda::stream(0));
  cudaGraph_t graph = capture_raw([&] { sgd.zeroGrad(); });
  CHECK(node_count(graph) == 2);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  set_grads(ps, 1);
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  cuda::synchronize(0);
  for (const Tensor& g : ps.g) CHECK(same_bits(g, zeros(g.sizes(), g.dtype())));
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
}

TEST_CASE("the multi-tensor entry points check their lists") {
  const Tensor p = zeros({4}, DType::Float32, gpu), g = zeros({4}, DType::Float32, gpu);
  const Tensor strided = zeros({4, 2}, DType::Float32, gpu).select(1, 0);
  CHECK_THROWS_AS(cuda::sgd_step({p}, {strided}, {}, {}, {.lr = 0.1}), Error);
  CHECK_THROWS_AS(cuda::sgd_step({p}, {g.to(DType::Float64)}, {}, {}, {.lr = 0.1}), Error);
  CHECK_THROWS_AS(cuda::sgd_step({p}, {g}, {}, {}, {.lr = 0.1, .momentum = 0.9}), Error);  // no buffers
  CHECK_THROWS_AS(cuda::adam_step({p}, {g}, {g.clone()}, {g.clone()}, {0.1}, {}, {.lr = 0.1}), Error);
  CHECK_THROWS_AS(cuda::adam_step({p.cpu()}, {g.cpu()}, {g.cpu()}, {g.cpu()}, {0.1}, {0.1}, {.lr = 0.1}), Error);
  CHECK_NOTHROW(cuda::sgd_step({}, {}, {}, {}, {.lr = 0.1}));
  // channels-last tensors pair up with tensors laid out alike, not with row-major ones
  const Tensor q = zeros({2, 3, 4, 5}, DType::Float32, gpu).contiguous(MemoryFormat::ChannelsLast);
  CHECK_NOTHROW(cuda::sgd_step({q}, {zeros_like(q)}, {}, {}, {.lr = 0.1}));
  CHECK_THROWS_WITH_AS(cuda::sgd_step({q}, {zeros({2, 3, 4, 5}, DType::Float32, gpu)}, {}, {}, {.lr = 0.1}),
                       doctest::Contains("gradient 0 to be a dense float32 tensor on cuda:0 of parameter 0's shape "
                                         "and layout ([2 x 3 x 4 x 5])"),
                       Error);
}

TEST_CASE("channels-last parameters take the fused kernels: the row-major parameters' bits, state laid out alike") {
  // What Module::to(MemoryFormat::ChannelsLast) makes of a filter; a gradient laid out otherwise
  // sends the parameter through the tensor ops, with the same bits again.
  Generator gen(92);
  const Tensor value = uniform({8, 3, 5, 5}, -1, 1, gen).to(gpu);
  const Tensor grad = uniform({8, 3, 5, 5}, -1, 1, gen).to(gpu);
  for (const Named& o : optimizers()) {
    if (o.name.ends_with("groups")) continue;  // two groups need two parameters
    INFO(o.name);
    Params rowMajor{{value.clone()}, {grad.clone()}};
    Params channelsLast{{value.contiguous(MemoryFormat::ChannelsLast)}, {grad.contiguous(MemoryFormat::ChannelsLast)}};
    Params mixed{{value.contiguous(MemoryFormat::ChannelsLast)}, {grad.clone()}};
    auto a = o.make(rowMajor), b = o.make(channelsLast), c = o.make(mixed);
    for (int k = 0; k < kSteps; ++k) {
      a->step();
      b->step();
      c->step();
    }
    CHECK(same_bits(channelsLast.p[0], rowMajor.p[0]));
    CHECK(same_bits(mixed.p[0], rowMajor.p[0]));
    CHECK(channelsLast.p[0].is_contiguous(MemoryFormat::ChannelsLast));
    for (const auto& [key, t] : b->stateDict()) {
      INFO(key);
      if (t.dim() == 4) CHECK(t.is_contiguous(MemoryFormat::ChannelsLast));  // momentum, moments
    }
    check_same(channelsLast, rowMajor, *b, *a);
  }
}
