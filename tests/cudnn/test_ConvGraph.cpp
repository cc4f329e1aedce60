// test_ConvGraph.cpp: the graph-API engines behind ConvPlan (Note [Candidates] in
// cudnn/ops/conv.cpp). Each pass, chosen by guess and by timing, must pick a graph engine
// where cuDNN offers one and compute what a direct float64 convolution computes, alpha and
// beta included; strided (channels-last) buffers are described as they are; what the graph
// path cannot take (unaligned buffers, pins, *_once, conv.graph=false) goes legacy.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "cudnn/ops/conv.h"
#include "cudnn/ops/conv_graph.h"
#include "tensor/Cuda.h"
#include "tests/support/OpReference.h"

using namespace tensor;

namespace {

const Device gpu = Device::cuda(0);

bool is_graph(int algo) { return algo >= cudnn::kGraphEngine; }

// A 3x3 convolution with padding 1 and stride `stride`, its reference spec and plan spec.
struct Geometry {
  int stride = 1;
  reference::ConvSpec ref() const {
    reference::ConvSpec s;
    s.pad = {1, 1};
    s.stride = {stride, stride};
    return s;
  }
  cudnn::ConvSpec plan() const {
    cudnn::ConvSpec g;  // 2-d: the last two slots
    g.pad = {0, 1, 1};
    g.stride = {1, stride, stride};
    return g;
  }
};

// The gradients' reference through the adjoint: <conv(x, w), g> = <x, dx> = <w, dw>.
struct Adjoint {
  Tensor x, w, g;
  double lhs;
};

Adjoint adjoint(Generator& gen, const Shape& xs, const Shape& ws, const Geometry& geo) {
  Adjoint a;
  a.x = uniform(xs, -1, 1, gen, DType::Float64);
  a.w = uniform(ws, -1, 1, gen, DType::Float64);
  const Tensor y = reference::conv(a.x, a.w, geo.ref());
  a.g = uniform(y.sizes(), -1, 1, gen, DType::Float64);
  a.lhs = reference::dot(y, a.g);
  return a;
}

}  // namespace

// Guessing takes cuDNN's heuristics order, graph engines first: each pass must run one. Timing
// picks whatever ran fastest here (graph engines on an idle H100 and H200; under
// compute-sanitizer, whose instrumentation distorts the times, sometimes a legacy algorithm),
// so the timed runs are checked for their result only and say what won.
TEST_CASE("every pass runs a graph engine by guess, whatever timing picks, and matches float64") {
  Generator gen(41);
  for (const char* mode : {"benchmark=false", "benchmark=false,conv.heuristics=b", "benchmark=true"}) {
    for (int stride : {1, 2}) {
      INFO(mode, " stride ", stride);
      const bool timed = std::string(mode) == "benchmark=true";
      auto expect_graph = [&](cudnn::ConvPass pass, const cudnn::ConvPlan& plan) {
        if (!timed) {
          CHECK(is_graph(plan.algorithm(pass)));
        } else {
          MESSAGE("timed ", std::string(cudnn::pass_name(pass)), " stride ", stride, ": ",
                  std::string(is_graph(plan.algorithm(pass)) ? "a graph engine" : "a legacy algorithm"));
        }
      };
      cudnn::ScopedConfig flags(std::string("allow_tf32=false,") + mode);
      cudnn::clear_algorithm_cache();
      const Geometry geo{stride};
      const Adjoint a = adjoint(gen, {4, 16, 14, 14}, {32, 16, 3, 3}, geo);
      const Tensor ref = reference::conv(a.x, a.w, geo.ref());
      cudnn::ConvPlan plan;
      Tensor y = empty(ref.sizes(), DType::Float32, gpu);
      plan.forward(a.x.to(gpu, DType::Float32), a.w.to(gpu, DType::Float32), y, geo.plan());
      expect_graph(cudnn::ConvPass::Forward, plan);
      CHECK(rel_norm_error(y, ref) < 1e-5);
      Tensor dx = empty(a.x.sizes(), DType::Float32, gpu);
      plan.backward_data(a.w.to(gpu, DType::Float32), a.g.to(gpu, DType::Float32), dx, geo.plan());
      expect_graph(cudnn::ConvPass::BackwardData, plan);
      CHECK(reference::dot(a.x, dx) == doctest::Approx(a.lhs).epsilon(1e-4));
      Tensor dw = empty(a.w.sizes(), DType::Float32, gpu);
      plan.backward_filter(a.x.to(gpu, DType::Float32), a.g.to(gpu, DType::Float32), dw, geo.plan());
      expect_graph(cudnn::ConvPass::BackwardFilter, plan);
      CHECK(reference::dot(a.w, dw) == doctest::Approx(a.lhs).epsilon(1e-4));
      CHECK(plan.searches() == 3);
    }
  }
}

// Note [Heuristics modes]: conv.heuristics is part of the key, so a shape searched under mode A
// is searched again under mode B (and each list cached apart), and both give the same answer.
TEST_CASE("conv.heuristics: mode B ranks its own list, in its own cache entry, to the same result") {
  Generator gen(42);
  const Geometry geo{1};
  const Adjoint a = adjoint(gen, {4, 16, 14, 14}, {32, 16, 3, 3}, geo);
  const Tensor ref = reference::conv(a.x, a.w, geo.ref());
  cudnn::ScopedConfig flags("allow_tf32=false");
  cudnn::clear_algorithm_cache();
  cudnn::ConvPlan plan;
  Tensor y = empty(ref.sizes(), DType::Float32, gpu);
  const Tensor x = a.x.to(gpu, DType::Float32), w = a.w.to(gpu, DType::Float32);
  plan.forward(x, w, y, geo.plan());
  CHECK(plan.searches() == 1);
  const size_t entries = cudnn::algorithm_cache_size();
  cudnn::set_flags("conv.heuristics=b");
  plan.forward(x, w, y, geo.plan());
  CHECK(plan.searches() == 2);
  CHECK(cudnn::algorithm_cache_size() == entries + 1);
  CHECK(is_graph(plan.algorithm(cudnn::ConvPass::Forward)));
  CHECK(rel_norm_error(y, ref) < 1e-5);
  plan.forward(x, w, y, geo.plan());
  CHECK(plan.searches() == 2);  // remembered
  // conv_engines itself: each engine once, at most `max`, mode B's order leading
  cudnn::graph::ConvGraphSpec spec;
  spec.pass = cudnn::ConvPass::Forward;
  spec.data = CUDNN_DATA_FLOAT;
  spec.compute = CUDNN_DATA_FLOAT;
  spec.x_sizes = x.sizes();
  spec.x_strides = x.strides();
  spec.w_sizes = w.sizes();
  spec.w_strides = w.strides();
  spec.y_sizes = y.sizes();
  spec.y_strides = y.strides();
  spec.geometry = geo.plan();
  spec.geometry.k = {1, 3, 3};
  std::string why;
  const auto ranked = cudnn::graph::conv_engines(spec, cudnn::handle(), 10, 1, why, true);
  INFO(why);
  REQUIRE(!ranked.empty());
  CHECK(ranked.size() <= 10);
  std::set<int64_t> distinct;
  for (const auto& e : ranked) CHECK(distinct.insert(e->global_index()).second);
}

TEST_CASE("alpha and beta: out = alpha * op + beta * out, and beta 0 ignores NaN in out") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  cudnn::clear_algorithm_cache();
  Generator gen(42);
  const Geometry geo;
  const Adjoint a = adjoint(gen, {2, 8, 10, 10}, {8, 8, 3, 3}, geo);
  const Tensor ref = reference::conv(a.x, a.w, geo.ref());
  cudnn::ConvPlan plan;
  const Tensor x = a.x.to(gpu, DType::Float32), w = a.w.to(gpu, DType::Float32), g = a.g.to(gpu, DType::Float32);

  // beta 0 over a NaN-filled output
  Tensor y = full(ref.sizes(), std::numeric_limits<double>::quiet_NaN(), DType::Float32, gpu);
  plan.forward(x, w, y, geo.plan());
  CHECK(rel_norm_error(y, ref) < 1e-5);
  // y = 0.5 * conv + 2 * y  ->  2.5 * conv
  plan.forward(x, w, y, geo.plan(), 0.5, 2);
  CHECK(rel_norm_error(y, ref.mul(2.5)) < 1e-5);

  // the twins accumulate filter gradients: dw = scale * op + 1 * dw
  Tensor dw = empty(a.w.sizes(), DType::Float32, gpu);
  plan.backward_filter(x, g, dw, geo.plan());
  const Tensor once = dw.clone();
  plan.backward_filter(x, g, dw, geo.plan(), 0.25, 1);
  CHECK(rel_norm_error(dw, once.mul(1.25)) < 1e-5);
  CHECK(reference::dot(a.w, once) == doctest::Approx(a.lhs).epsilon(1e-4));
  CHECK(is_graph(plan.algorithm(cudnn::ConvPass::BackwardFilter)));  // blended after the engine

  Tensor dx = full(a.x.sizes(), std::numeric_limits<double>::quiet_NaN(), DType::Float32, gpu);
  plan.backward_data(w, g, dx, geo.plan());
  CHECK(reference::dot(a.x, dx) == doctest::Approx(a.lhs).epsilon(1e-4));
}

TEST_CASE("16-bit data through graph engines, NaN and Inf propagate as in the legacy path") {
  Generator gen(43);
  const Geometry geo;
  const Adjoint a = adjoint(gen, {8, 32, 12, 12}, {32, 32, 3, 3}, geo);
  const Tensor ref = reference::conv(a.x, a.w, geo.ref());
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    INFO(name(dt));
    cudnn::clear_algorithm_cache();
    cudnn::ConvPlan plan;
    Tensor y = empty(ref.sizes(), dt, gpu);
    Tensor x = a.x.to(gpu, dt);
    plan.forward(x, a.w.to(gpu, dt), y, geo.plan());
    CHECK(is_graph(plan.algorithm(cudnn::ConvPass::Forward)));
    CHECK(rel_norm_error(y, ref) < (dt == DType::Float16 ? 3e-3 : 2e-2));

    // one NaN and one Inf input pixel: the outputs they reach are NaN, the same ones as legacy
    Tensor bad = a.x.clone();
    bad[0][0][3][3].fill_(std::numeric_limits<double>::quiet_NaN());
    bad[1][0][6][6].fill_(std::numeric_limits<double>::infinity());
    Tensor y_graph = empty(ref.sizes(), dt, gpu), y_legacy = empty(ref.sizes(), dt, gpu);
    plan.forward(bad.to(gpu, dt), a.w.to(gpu, dt), y_graph, geo.plan());
    {
      cudnn::ScopedConfig legacy("conv.graph=false");
      cudnn::ConvPlan legacy_plan;
      legacy_plan.forward(bad.to(gpu, dt), a.w.to(gpu, dt), y_legacy, geo.plan());
      CHECK_FALSE(is_graph(legacy_plan.algorithm(cudnn::ConvPass::Forward)));
    }
    const Tensor yg = y_graph.to(Device::cpu(), DType::Float64), yl = y_legacy.to(Device::cpu(), DType::Float64);
    int64_t finite_mismatch = 0, nan_graph = 0;
    for (int64_t i = 0; i < yg.numel(); ++i) {
      const double u = yg.data<double>()[i], v = yl.data<double>()[i];
      nan_graph += std::isnan(u);
      finite_mismatch += std::isfinite(u) != std::isfinite(v);
    }
    CHECK(nan_graph > 0);
    CHECK(finite_mismatch == 0);
  }
}

TEST_CASE("channels-last buffers are described by their strides") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  cudnn::clear_algorithm_cache();
  Generator gen(44);
  const Geometry geo;
  const Adjoint a = adjoint(gen, {2, 16, 9, 9}, {16, 16, 3, 3}, geo);
  const Tensor ref = reference::conv(a.x, a.w, geo.ref());
  // NHWC storage viewed as NCHW: what a channels-last network hands the plan
  auto nhwc = [](const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); };
  const Tensor x = nhwc(a.x.to(gpu, DType::Float32));
  Tensor y = nhwc(empty(ref.sizes(), DType::Float32, gpu));
  REQUIRE_FALSE(x.is_contiguous());
  cudnn::ConvPlan plan;
  plan.forward(x, a.w.to(gpu, DType::Float32), y, geo.plan());
  CHECK(is_graph(plan.algorithm(cudnn::ConvPass::Forward)));
  CHECK(rel_norm_error(y, ref) < 1e-5);
}

TEST_CASE("what the graph path does not take goes legacy: unaligned buffers, pins, once, conv.graph=false") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(45);
  const Geometry geo;
  const Adjoint a = adjoint(gen, {2, 4, 8, 8}, {4, 4, 3, 3}, geo);
  const Tensor ref = reference::conv(a.x, a.w, geo.ref());
  const Tensor w = a.w.to(gpu, DType::Float32);
  auto forward = [&](cudnn::ConvPlan& plan, const Tensor& x) {
    Tensor y = empty(ref.sizes(), DType::Float32, gpu);
    plan.forward(x, w, y, geo.plan());
    CHECK(rel_norm_error(y, ref) < 1e-5);
    return plan.algorithm(cudnn::ConvPass::Forward);
  };
  const Tensor x = a.x.to(gpu, DType::Float32);
  {
    cudnn::ConvPlan plan;
    CHECK(is_graph(forward(plan, x)));
  }
  {
    // one float past a 256-byte boundary: 4-byte aligned only
    Tensor buffer = empty({x.numel() + 1}, DType::Float32, gpu);
    Tensor shifted = buffer.narrow(0, 1, x.numel()).view(x.sizes());
    shifted.copy_(x);
    cudnn::ConvPlan plan;
    CHECK_FALSE(is_graph(forward(plan, shifted)));
  }
  for (const char* mode : {"none", "guess_once", "time_once"}) {
    INFO(mode);
    cudnn::ConvPlan plan;
    plan.setMode(mode, "", "");
    CHECK_FALSE(is_graph(forward(plan, x)));
  }
  {
    cudnn::ScopedConfig off("conv.graph=false");
    cudnn::ConvPlan plan;
    CHECK_FALSE(is_graph(forward(plan, x)));
  }
}

TEST_CASE("deterministic=true: graph engines too give bitwise-equal gradients") {
  cudnn::ScopedConfig flags("deterministic=true,allow_tf32=false");
  cudnn::clear_algorithm_cache();
  Generator gen(46);
  Tensor x = uniform({16, 8, 20, 20}, -1, 1, gen, DType::Float32, gpu);
  Tensor g = uniform({16, 8, 20, 20}, -1, 1, gen, DType::Float32, gpu);
  Tensor w = uniform({8, 8, 3, 3}, -1, 1, gen, DType::Float32, gpu);
  const Geometry geo;
  auto grads = [&] {
    cudnn::ConvPlan plan;
    Tensor dw = empty(w.sizes(), DType::Float32, gpu), dx = empty(x.sizes(), DType::Float32, gpu);
    plan.backward_filter(x, g, dw, geo.plan());
    plan.backward_data(w, g, dx, geo.plan());
    return std::make_pair(dw, dx);
  };
  const auto first = grads(), second = grads();
  CHECK(max_abs_diff(first.first, second.first) == 0);
  CHECK(max_abs_diff(first.second, second.second) == 0);
}

TEST_CASE("conv.cache_limit bounds the algorithm cache; a forgotten shape is searched again and computes the same") {
  cudnn::ScopedConfig flags("allow_tf32=false,conv.cache_limit=3");
  cudnn::clear_algorithm_cache();
  Generator gen(47);
  const Tensor w = uniform({4, 3, 3, 3}, -1, 1, gen, DType::Float64);
  const Geometry geo;
  cudnn::ConvParams p;
  p.border_mode = cudnn::BorderMode::half();
  p.conv_mode = cudnn::ConvParams::Mode::Cross;
  std::vector<Tensor> xs;
  for (int64_t side = 6; side < 11; ++side) xs.push_back(uniform({2, 3, side, side}, -1, 1, gen, DType::Float64));
  auto check_one = [&](const Tensor& x) {
    INFO("input ", shape_str(x.sizes()));
    const Tensor y = cudnn::conv(x.to(gpu, DType::Float32), w.to(gpu, DType::Float32), p);
    CHECK(rel_norm_error(y, reference::conv(x, w, geo.ref())) < 1e-5);
  };
  for (const Tensor& x : xs) check_one(x);  // five shapes, one forward key each
  CHECK(cudnn::algorithm_cache_size() == 3);
  check_one(xs[0]);  // forgotten: searched again
  CHECK(cudnn::algorithm_cache_size() == 3);
  {
    cudnn::ScopedConfig unbounded("conv.cache_limit=0");
    for (const Tensor& x : xs) check_one(x);
    CHECK(cudnn::algorithm_cache_size() == 5);
  }
  cudnn::clear_algorithm_cache();
}

// graph::VariantPackCache keeps the packs of four pointer sets: inputs that cycle through
// more buffers than that (the DataLoader's slots, and then some) must each be read, never a
// stale pack's buffer, whether their pack is remembered or rebuilt over the least recent one.
TEST_CASE("a graph engine fed from rotating input buffers reads each one (remembered and evicted packs)") {
  cudnn::ScopedConfig flags("allow_tf32=false,benchmark=false");
  Generator gen(53);
  const Geometry geo;
  const Tensor w = uniform({8, 4, 3, 3}, -1, 1, gen, DType::Float64);
  const Tensor wg = w.to(gpu, DType::Float32);
  std::vector<Tensor> xs, refs;
  for (int i = 0; i < 6; ++i) {
    xs.push_back(uniform({2, 4, 9, 9}, -1, 1, gen, DType::Float64));
    refs.push_back(reference::conv(xs.back(), w, geo.ref()));
  }
  std::vector<Tensor> slots;
  for (const Tensor& x : xs) slots.push_back(x.to(gpu, DType::Float32));
  cudnn::ConvPlan plan;
  Tensor y = empty(refs[0].sizes(), DType::Float32, gpu);
  // 3 slots in turn (all remembered), then all 6 (every pack rebuilt over an older one), twice
  for (int n : {3, 3, 6, 6}) {
    for (int i = 0; i < n; ++i) {
      INFO("buffer ", i, " of ", n);
      plan.forward(slots[i], wg, y, geo.plan());
      REQUIRE(is_graph(plan.algorithm(cudnn::ConvPass::Forward)));
      CHECK(rel_norm_error(y, refs[i]) < 1e-5);
    }
  }
  CHECK(plan.searches() == 1);
}

// Note [Engine configurations]: a guess takes each engine once, a timed search up to four of
// its configurations, in the heuristics' order either way.
TEST_CASE("conv_engines: one configuration per engine, or up to per_engine, in the heuristics' order") {
  for (const cudnnDataType_t data : {CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
    INFO("cudnn data type ", static_cast<int>(data));
    cudnn::graph::ConvGraphSpec spec;
    spec.pass = cudnn::ConvPass::Forward;
    spec.data = data;
    spec.compute = CUDNN_DATA_FLOAT;
    spec.x_sizes = {8, 32, 20, 20};
    spec.x_strides = {32 * 20 * 20, 20 * 20, 20, 1};
    spec.w_sizes = {32, 32, 5, 5};
    spec.w_strides = {32 * 5 * 5, 5 * 5, 5, 1};
    spec.y_sizes = {8, 32, 16, 16};
    spec.y_strides = {32 * 16 * 16, 16 * 16, 16, 1};
    spec.geometry.k = {1, 5, 5};
    std::string why;
    const auto once = cudnn::graph::conv_engines(spec, cudnn::handle(), 10, 1, why);
    INFO(why);
    REQUIRE(!once.empty());
    CHECK(once.size() <= 10);
    const auto several = cudnn::graph::conv_engines(spec, cudnn::handle(), 24, 4, why);
    CHECK(several.size() >= once.size());
    CHECK(several.size() <= 24);
    std::map<int64_t, int> count;
    std::vector<int64_t> first_seen;
    for (const auto& e : several) {
      if (count[e->global_index()]++ == 0) first_seen.push_back(e->global_index());
      CHECK(count[e->global_index()] <= 4);
    }
    std::set<int64_t> distinct;
    for (size_t i = 0; i < once.size(); ++i) {
      CHECK(distinct.insert(once[i]->global_index()).second);  // each engine once
      // the same engines lead, in the same order
      if (i < first_seen.size()) CHECK(once[i]->global_index() == first_seen[i]);
    }
    // a later configuration says which it is
    for (const auto& e : several) {
      if (e->name().find("(config ") != std::string::npos) CHECK(count[e->global_index()] > 1);
    }
  }
}
