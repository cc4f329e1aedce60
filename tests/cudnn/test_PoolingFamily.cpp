// test_PoolingFamily.cpp: the four pooling twins (cudnn.SpatialMaxPooling, SpatialAveragePooling,
// VolumetricMaxPooling, VolumetricAveragePooling) against their nn modules, as one table: each
// row names its configurations (floor and ceil mode: ceil adding windows, ceil dropping a window
// that would start in the right padding, ceil without padding; padding, overlapping windows, odd
// sizes; count_include_pad on and off), the factories of both sides, max or average, and the
// planes of its inputs; every row goes through the same checks (tests/support/PoolingTwinChecks.h):
// float32, float64, float16, bfloat16, batch / batch 1 / non-batch, a non-contiguous input, an
// in-place layer writing into the output, no steady-state allocation, NaN and +-Inf. The types'
// own cases follow the table: deterministic max pooling, convert round trips, printing, errors.
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/SpatialAveragePooling.h"
#include "cudnn/SpatialCrossMapLRN.h"
#include "cudnn/SpatialMaxPooling.h"
#include "cudnn/VolumetricAveragePooling.h"
#include "cudnn/VolumetricMaxPooling.h"
#include "cudnn/core/Config.h"
#include "cudnn/ops/pool.h"
#include "nn/Sequential.h"
#include "nn/SpatialAveragePooling.h"
#include "nn/SpatialCrossMapLRN.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/VolumetricAveragePooling.h"
#include "nn/VolumetricMaxPooling.h"
#include "tests/support/PoolingTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;
using pooltwin::Ceil;
using pooltwin::gpu;
using pooltwin::PoolCfg;

// ---- SpatialMaxPooling: its configurations
namespace spatial_max {

// (kH, kW), (dH, dW), (padH, padW), (H, W)
const std::vector<PoolCfg> cfgs = {
    {{2, 2}, {2, 2}, {0, 0}, {8, 8}, Ceil::Off, true, "2x2, 2,2 (floor, exact fit)"},
    {{2, 2}, {2, 2}, {0, 0}, {7, 9}, Ceil::Off, true, "2x2, 2,2 (floor, odd sizes)"},
    {{3, 3}, {2, 2}, {1, 1}, {7, 9}, Ceil::Off, true, "3x3, 2,2, 1,1 (floor, overlapping windows, padding)"},
    {{3, 3}, {2, 2}, {1, 1}, {6, 8}, Ceil::Adds, true, "3x3, 2,2, 1,1 ceil (adds a row and a column)"},
    {{2, 2}, {2, 2}, {1, 1}, {5, 9}, Ceil::Drops, true, "2x2, 2,2, 1,1 ceil (windows in the right padding dropped)"},
    {{2, 3}, {2, 2}, {0, 0}, {6, 6}, Ceil::Adds, true, "3x2, 2,2 ceil without padding (adds a column)"},
    {{2, 2}, {2, 2}, {0, 0}, {5, 7}, Ceil::Adds, true, "2x2, 2,2 ceil without padding, odd sizes"},
    {{2, 3}, {1, 1}, {1, 1}, {5, 6}, Ceil::Off, true, "3x2, 1,1, 1,1 (stride 1 < kernel)"},
    {{2, 4}, {1, 2}, {1, 2}, {5, 7}, Ceil::Adds, true, "4x2, 2,1, 2,1 ceil (stride < kernel, padding k/2)"},
    {{4, 5}, {3, 2}, {2, 2}, {9, 11}, Ceil::Off, true, "5x4, 2,3, 2,2 (floor)"},
    {{4, 5}, {3, 2}, {2, 2}, {11, 12}, Ceil::Adds, true, "5x4, 2,3, 2,2 ceil"},
    {{1, 1}, {2, 2}, {0, 0}, {5, 5}, Ceil::NoEffect, true, "1x1, 2,2 ceil (no effect)"},
    {{3, 3}, {3, 3}, {0, 0}, {7, 8}, Ceil::Adds, true, "3x3, 3,3 ceil"},
};

nn::ModulePtr make_nn(const PoolCfg& c) { return pooltwin::make_pool<nn::SpatialMaxPooling>(c); }
nn::ModulePtr make_cu(const PoolCfg& c) { return pooltwin::make_pool<cudnn::SpatialMaxPooling>(c); }

}  // namespace spatial_max

// ---- SpatialAveragePooling: its configurations
namespace spatial_avg {

// (kH, kW), (dH, dW), (padH, padW), (H, W), ceil, count_include_pad
const std::vector<PoolCfg> cfgs = {
    {{2, 2}, {2, 2}, {0, 0}, {8, 8}, Ceil::Off, true, "2x2, 2,2 (floor, exact fit)"},
    {{3, 3}, {2, 2}, {1, 1}, {7, 9}, Ceil::Off, true, "3x3, 2,2, 1,1 (floor, overlap, padding counted)"},
    {{3, 3}, {2, 2}, {1, 1}, {7, 9}, Ceil::Off, false, "3x3, 2,2, 1,1 (floor, overlap, padding not counted)"},
    {{3, 3}, {2, 2}, {1, 1}, {6, 8}, Ceil::Adds, true, "3x3, 2,2, 1,1 ceil (adds windows), padding counted"},
    {{3, 3}, {2, 2}, {1, 1}, {6, 8}, Ceil::Adds, false, "3x3, 2,2, 1,1 ceil (adds windows), padding not counted"},
    {{2, 2}, {2, 2}, {1, 1}, {5, 9}, Ceil::Drops, true, "2x2, 2,2, 1,1 ceil (right-padding windows dropped), counted"},
    {{2, 2}, {2, 2}, {1, 1}, {5, 9}, Ceil::Drops, false, "2x2, 2,2, 1,1 ceil (right-padding windows dropped)"},
    {{2, 3}, {2, 2}, {0, 0}, {6, 6}, Ceil::Adds, true, "3x2, 2,2 ceil without padding (adds a column)"},
    {{2, 2}, {2, 2}, {0, 0}, {5, 7}, Ceil::Adds, false, "2x2, 2,2 ceil without padding, odd sizes"},
    {{2, 3}, {1, 1}, {1, 1}, {5, 6}, Ceil::Off, false, "3x2, 1,1, 1,1 (stride 1 < kernel)"},
    {{2, 4}, {1, 2}, {1, 2}, {5, 7}, Ceil::Adds, true, "4x2, 2,1, 2,1 ceil (stride < kernel, padding k/2), counted"},
    {{2, 4}, {1, 2}, {1, 2}, {5, 7}, Ceil::Adds, false, "4x2, 2,1, 2,1 ceil (stride < kernel, padding k/2)"},
    {{4, 5}, {3, 2}, {2, 2}, {9, 11}, Ceil::Off, false, "5x4, 2,3, 2,2 (floor)"},
    {{4, 5}, {3, 2}, {2, 2}, {11, 12}, Ceil::Adds, true, "5x4, 2,3, 2,2 ceil"},
    {{1, 1}, {2, 2}, {0, 0}, {5, 5}, Ceil::NoEffect, true, "1x1, 2,2 ceil (no effect)"},
    {{3, 3}, {1, 1}, {1, 1}, {5, 5}, Ceil::Off, false, "3x3, 1,1, 1,1 ('same' size)"},
};

nn::ModulePtr make_nn(const PoolCfg& c) { return pooltwin::make_pool<nn::SpatialAveragePooling>(c); }
nn::ModulePtr make_cu(const PoolCfg& c) { return pooltwin::make_pool<cudnn::SpatialAveragePooling>(c); }

}  // namespace spatial_avg

// ---- VolumetricMaxPooling: its configurations
namespace volumetric_max {

// (kT, kH, kW), (dT, dH, dW), (padT, padH, padW), (T, H, W); Torch prints kT x kW x kH
const std::vector<PoolCfg> cfgs = {
    {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {4, 6, 6}, Ceil::Off, true, "2x2x2, 2,2,2 (floor, exact fit)"},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {5, 6, 7}, Ceil::Off, true, "3x3x3, 2,2,2, 1,1,1 (floor, overlap, padding)"},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {6, 6, 8}, Ceil::Adds, true, "3x3x3, 2,2,2, 1,1,1 ceil (adds in every dim)"},
    {{2, 3, 3}, {2, 2, 2}, {1, 1, 1}, {5, 6, 7}, Ceil::Adds, true, "2x3x3, 2,2,2, 1,1,1 ceil (adds in H, drops in T)"},
    {{2, 2, 2},
     {2, 2, 2},
     {1, 1, 1},
     {5, 5, 9},
     Ceil::Drops,
     true,
     "2x2x2, 2,2,2, 1,1,1 ceil (right-padding windows dropped)"},
    {{2, 3, 2}, {2, 2, 2}, {0, 0, 0}, {5, 6, 7}, Ceil::Adds, true, "2x2x3, 2,2,2 ceil without padding"},
    {{3, 2, 2}, {1, 1, 1}, {1, 1, 1}, {4, 5, 5}, Ceil::Off, true, "3x2x2, 1,1,1, 1,1,1 (stride 1 < kernel)"},
    {{1, 3, 2}, {1, 2, 2}, {0, 1, 1}, {3, 7, 8}, Ceil::Off, true, "1x2x3, 1,2,2, 0,1,1 (depth-1 kernel)"},
    {{2, 3, 1}, {3, 2, 1}, {1, 1, 0}, {7, 5, 6}, Ceil::Drops, true, "2x1x3, 3,1,2, 1,0,1 ceil (a T window dropped)"},
    {{3, 2, 3}, {2, 1, 3}, {1, 1, 1}, {5, 6, 7}, Ceil::NoEffect, true, "3x3x2, 2,3,1, 1,1,1 ceil (no effect)"},
};

nn::ModulePtr make_nn(const PoolCfg& c) { return pooltwin::make_pool<nn::VolumetricMaxPooling>(c); }
nn::ModulePtr make_cu(const PoolCfg& c) { return pooltwin::make_pool<cudnn::VolumetricMaxPooling>(c); }

}  // namespace volumetric_max

// ---- VolumetricAveragePooling: its configurations
namespace volumetric_avg {

// (kT, kH, kW), (dT, dH, dW), (padT, padH, padW), (T, H, W), ceil, count_include_pad
const std::vector<PoolCfg> cfgs = {
    {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {4, 6, 6}, Ceil::Off, true, "2x2x2, 2,2,2 (floor, exact fit)"},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {5, 6, 7}, Ceil::Off, true, "3x3x3, 2,2,2, 1,1,1 (floor), padding counted"},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {5, 6, 7}, Ceil::Off, false, "3x3x3, 2,2,2, 1,1,1 (floor), padding not counted"},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {6, 6, 8}, Ceil::Adds, true, "3x3x3, 2,2,2, 1,1,1 ceil (adds), padding counted"},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {6, 6, 8}, Ceil::Adds, false, "3x3x3, 2,2,2, 1,1,1 ceil (adds), not counted"},
    {{2, 3, 3}, {2, 2, 2}, {1, 1, 1}, {5, 6, 7}, Ceil::Adds, false, "2x3x3, 2,2,2, 1,1,1 ceil (adds in H, drops in T)"},
    {{2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {5, 5, 9}, Ceil::Drops, true, "2x2x2, 2,2,2, 1,1,1 ceil (dropped), counted"},
    {{2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {5, 5, 9}, Ceil::Drops, false, "2x2x2, 2,2,2, 1,1,1 ceil (dropped), not counted"},
    {{2, 3, 2}, {2, 2, 2}, {0, 0, 0}, {5, 6, 7}, Ceil::Adds, true, "2x2x3, 2,2,2 ceil without padding"},
    {{3, 2, 2}, {1, 1, 1}, {1, 1, 1}, {4, 5, 5}, Ceil::Off, false, "3x2x2, 1,1,1, 1,1,1 (stride 1 < kernel)"},
    {{1, 3, 2}, {1, 2, 2}, {0, 1, 1}, {3, 7, 8}, Ceil::Off, false, "1x2x3, 1,2,2, 0,1,1 (depth-1 kernel)"},
    {{2, 3, 1}, {3, 2, 1}, {1, 1, 0}, {7, 5, 6}, Ceil::Drops, true, "2x1x3, 3,1,2, 1,0,1 ceil (a T window dropped)"},
};

nn::ModulePtr make_nn(const PoolCfg& c) { return pooltwin::make_pool<nn::VolumetricAveragePooling>(c); }
nn::ModulePtr make_cu(const PoolCfg& c) { return pooltwin::make_pool<cudnn::VolumetricAveragePooling>(c); }

}  // namespace volumetric_avg

namespace {

struct PoolingTwin {
  const char* name;
  const std::vector<PoolCfg>& cfgs;
  pooltwin::PoolFactory makeNn, makeCu;
  bool max;
  int64_t channels;                 // planes of the inputs
  std::vector<size_t> inPlaceCfgs;  // the configurations an in-place layer writes behind
  std::vector<size_t> steadyCfgs;   // the configurations of the steady-state check
};

const std::vector<PoolingTwin>& poolings() {
  static const std::vector<PoolingTwin> rows = {
      {"SpatialMaxPooling", spatial_max::cfgs, spatial_max::make_nn, spatial_max::make_cu, true, 3, {2, 3, 8}, {2, 3}},
      {"SpatialAveragePooling",
       spatial_avg::cfgs,
       spatial_avg::make_nn,
       spatial_avg::make_cu,
       false,
       3,
       {2, 4, 11},
       {2, 4}},
      {"VolumetricMaxPooling",
       volumetric_max::cfgs,
       volumetric_max::make_nn,
       volumetric_max::make_cu,
       true,
       2,
       {1, 2},
       {1, 2}},
      {"VolumetricAveragePooling",
       volumetric_avg::cfgs,
       volumetric_avg::make_nn,
       volumetric_avg::make_cu,
       false,
       2,
       {2, 4},
       {2, 4}},
  };
  return rows;
}

std::vector<PoolCfg> pick(const std::vector<PoolCfg>& cfgs, const std::vector<size_t>& which) {
  std::vector<PoolCfg> out;
  for (size_t i : which) out.push_back(cfgs.at(i));
  return out;
}

}  // namespace

TEST_CASE("pooling twins match nn in float32 and float64 (floor, ceil, padding, overlap, batch and not)") {
  for (const PoolingTwin& t : poolings()) {
    INFO(t.name);
    pooltwin::expect_pool_twins_match(t.cfgs, t.makeNn, t.makeCu, t.max, DType::Float32, false, t.channels);
    pooltwin::expect_pool_twins_match(t.cfgs, t.makeNn, t.makeCu, t.max, DType::Float64, false, t.channels);
  }
}

TEST_CASE("pooling twins match nn in float16 and bfloat16") {
  for (const PoolingTwin& t : poolings()) {
    INFO(t.name);
    pooltwin::expect_pool_twins_match(t.cfgs, t.makeNn, t.makeCu, t.max, DType::Float16, false, t.channels);
    pooltwin::expect_pool_twins_match(t.cfgs, t.makeNn, t.makeCu, t.max, DType::BFloat16, false, t.channels);
  }
}

TEST_CASE("pooling twins match nn with a non-contiguous input") {
  for (const PoolingTwin& t : poolings()) {
    INFO(t.name);
    pooltwin::expect_pool_twins_match(t.cfgs, t.makeNn, t.makeCu, t.max, DType::Float32, true, t.channels);
  }
}

TEST_CASE("pooling twins: gradients unaffected by an in-place layer writing into the output") {
  for (const PoolingTwin& t : poolings()) {
    INFO(t.name);
    pooltwin::expect_backward_ignores_output_changes(pick(t.cfgs, t.inPlaceCfgs), t.makeNn, t.makeCu, t.max,
                                                     t.channels);
  }
}

TEST_CASE("pooling twins steady state: no device allocation after a warm-up") {
  for (const PoolingTwin& t : poolings()) {
    INFO(t.name);
    Generator gen(8);
    for (const PoolCfg& c : pick(t.cfgs, t.steadyCfgs)) {
      nn::ModulePtr m = t.makeCu(c);
      m->to(gpu);
      Shape s = {2, t.channels};
      s.insert(s.end(), c.spatial.begin(), c.spatial.end());
      expect_no_steady_state_allocations(*m, uniform(s, -1, 1, gen).to(gpu));
    }
  }
}

TEST_CASE("pooling twins: NaN and +-Inf inputs give nn's values, floor and ceil mode (Note [NaN and Inf])") {
  for (const PoolingTwin& t : poolings()) {
    INFO(t.name);
    pooltwin::expect_pool_twins_nonfinite(t.cfgs, t.makeNn, t.makeCu, t.max);  // 3 planes, every type
  }
}

// ---- Max pooling's channels-last gradient: our kernel (Note [Channels-last max-pooling backward]
// in cudnn/kernels/PoolMaxBackward.cu), for every configuration of both max-pooling rows
namespace channels_last_max {

// Values on a coarse grid (ties in most windows); with `nonfinite`, NaN, +Inf and -Inf in about
// a quarter of the places (windows with two NaNs too). Exact in every dtype; float32 on the CPU.
Tensor tied_input(const Shape& shape, Generator& gen, bool nonfinite) {
  std::vector<float> v = uniform(shape, -2, 2, gen).round().to_vector<float>();
  if (nonfinite) {
    for (float& e : v) {
      const int64_t r = gen.randint(12);
      if (r == 0) e = NAN;
      if (r == 1) e = INFINITY;
      if (r == 2) e = -INFINITY;
    }
  }
  return from_vector<float>(v, shape);
}

// The twin's gradient of a copy of x in dt and `format` (channels-last unless said) equals nn's
// bit for bit: a tie or a NaN window gives the gradient to nn's element. gradOutput on a grid of
// 1/8 keeps every sum exact in every dtype.
void expect_nn_gradient(const PoolCfg& c, const pooltwin::PoolFactory& makeNn, const pooltwin::PoolFactory& makeCu,
                        int64_t channels, DType dt, bool nonfinite, Generator& gen,
                        MemoryFormat format = MemoryFormat::ChannelsLast) {
  Shape shape{2, channels};
  shape.insert(shape.end(), c.spatial.begin(), c.spatial.end());
  INFO(c.what, " on ", shape_str(shape), " in ", std::string(name(dt)), nonfinite ? " with NaN and +-Inf" : "",
       format == MemoryFormat::ChannelsLast ? ", channels-last" : ", row-major");
  const Tensor x = tied_input(shape, gen, nonfinite);
  nn::ModulePtr ref = makeNn(c), twin = makeCu(c);
  twin->to(gpu);
  const Tensor y = ref->forward(x);
  const Tensor g = uniform(y.sizes(), -4, 4, gen).mul(8.0).round().mul(0.125);
  const Tensor want = ref->backward(x, g).clone();
  const Tensor xg = x.to(gpu, dt).contiguous(format);
  twin->forward(xg);
  const Tensor got = twin->backward(xg, g.to(gpu, dt).contiguous(format));
  CHECK(got.is_contiguous(format));
  CHECK(max_abs_diff(got.to(Device::cpu(), DType::Float32), want) == 0);
}

TEST_CASE("channels-last max pooling gradient: nn's exactly with ties, NaN and +-Inf, every configuration") {
  cudnn::ScopedPoolBackward ours(cudnn::PoolBackward::Ours);  // auto gives overlapping windows to cuDNN
  Generator gen(28);
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (int64_t channels : {3, 8}) {  // one channel per access, and 8 (16 bytes of float16) per access
      for (bool nonfinite : {false, true}) {
        for (const PoolCfg& c : spatial_max::cfgs)
          expect_nn_gradient(c, spatial_max::make_nn, spatial_max::make_cu, channels, dt, nonfinite, gen);
        for (const PoolCfg& c : volumetric_max::cfgs)
          expect_nn_gradient(c, volumetric_max::make_nn, volumetric_max::make_cu, channels, dt, nonfinite, gen);
      }
    }
  }
}

TEST_CASE("pool.backward=ours: row-major max pooling gradients on our kernel too, nn's exactly, float64 included") {
  cudnn::ScopedPoolBackward ours(cudnn::PoolBackward::Ours);
  CHECK_FALSE(cudnn::PoolPlan::backward_reads_output(zeros({2, 3, 6, 6}, DType::Float32, gpu),
                                                     {{2, 2}, {2, 2}, {0, 0}, cudnn::PoolMode::Max, false}));
  Generator gen(31);
  for (DType dt : {DType::Float64, DType::Float32, DType::Float16}) {
    for (bool nonfinite : {false, true}) {
      for (const PoolCfg& c : spatial_max::cfgs) {
        expect_nn_gradient(c, spatial_max::make_nn, spatial_max::make_cu, 3, dt, nonfinite, gen,
                           MemoryFormat::Contiguous);
      }
      for (const PoolCfg& c : volumetric_max::cfgs) {
        expect_nn_gradient(c, volumetric_max::make_nn, volumetric_max::make_cu, 2, dt, nonfinite, gen,
                           MemoryFormat::Contiguous);
      }
    }
  }
}

TEST_CASE("pool.backward=cudnn: channels-last max pooling through cuDNN's call again, nn's gradient without ties") {
  cudnn::ScopedPoolBackward theirs(cudnn::PoolBackward::Cudnn);
  const Tensor cl = zeros({2, 8, 6, 6}, DType::Float32, gpu).contiguous(MemoryFormat::ChannelsLast);
  CHECK(cudnn::PoolPlan::backward_reads_output(cl, {{2, 2}, {2, 2}, {0, 0}, cudnn::PoolMode::Max, false}));
  Generator gen(32);
  for (const PoolCfg& c : {spatial_max::cfgs[0], spatial_max::cfgs[2]}) {
    Shape shape{2, 8};
    shape.insert(shape.end(), c.spatial.begin(), c.spatial.end());
    const Tensor x = pooltwin::distinct_input(shape, 2, gen).to(DType::Float32);
    nn::ModulePtr ref = spatial_max::make_nn(c), twin = spatial_max::make_cu(c);
    twin->to(gpu);
    const Tensor g = uniform(ref->forward(x).sizes(), -1, 1, gen);
    const Tensor want = ref->backward(x, g).clone();
    const Tensor xg = x.to(gpu).contiguous(MemoryFormat::ChannelsLast);
    twin->forward(xg);
    CHECK(max_abs_diff(twin->backward(xg, g.to(gpu)), want) < 1e-6);
  }
}

TEST_CASE("channels-last max pooling gradient at the networks' windows: VGG 2x2/2, AlexNet 3x3/2, ResNet 3x3/2 pad 1") {
  cudnn::ScopedPoolBackward ours(cudnn::PoolBackward::Ours);
  Generator gen(29);
  const std::vector<PoolCfg> nets = {
      {{2, 2}, {2, 2}, {0, 0}, {28, 28}, Ceil::Off, true, "VGG's 2x2, 2,2"},
      {{3, 3}, {2, 2}, {0, 0}, {27, 27}, Ceil::Off, true, "AlexNet's 3x3, 2,2"},
      {{3, 3}, {2, 2}, {1, 1}, {28, 28}, Ceil::Off, true, "ResNet's 3x3, 2,2, 1,1"},
  };
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (const PoolCfg& c : nets) {
      for (bool nonfinite : {false, true})
        expect_nn_gradient(c, spatial_max::make_nn, spatial_max::make_cu, 64, dt, nonfinite, gen);
    }
  }
}

TEST_CASE("channels-last max pooling: no copy of the output kept, in-place writes into it ignored, no allocations") {
  cudnn::PoolParams p{{2, 2}, {2, 2}, {0, 0}, cudnn::PoolMode::Max, false};
  const Tensor cl = zeros({2, 8, 6, 6}, DType::Float16, gpu).contiguous(MemoryFormat::ChannelsLast);
  CHECK_FALSE(cudnn::PoolPlan::backward_reads_output(cl, p));
  CHECK(cudnn::PoolPlan::backward_reads_output(zeros({2, 8, 6, 6}, DType::Float16, gpu), p));  // cuDNN's call
  cudnn::PoolParams overlapping{{3, 3}, {2, 2}, {1, 1}, cudnn::PoolMode::Max, false};
  CHECK_FALSE(cudnn::PoolPlan::backward_reads_output(cl, overlapping));  // auto: ours, faster there too
  p.mode = cudnn::PoolMode::AverageIncPad;
  CHECK(cudnn::PoolPlan::backward_reads_output(cl, p));
  {
    cudnn::ScopedPoolBackward theirs(cudnn::PoolBackward::Cudnn);
    CHECK(cudnn::PoolPlan::backward_reads_output(cl, overlapping));
  }
  cudnn::ScopedPoolBackward ours(cudnn::PoolBackward::Ours);
  CHECK_FALSE(cudnn::PoolPlan::backward_reads_output(cl, overlapping));

  Generator gen(30);
  const PoolCfg& c = spatial_max::cfgs[2];  // 3x3, 2,2, 1,1
  const Tensor x = tied_input({2, 8, 7, 9}, gen, false);
  nn::ModulePtr ref = spatial_max::make_nn(c), twin = spatial_max::make_cu(c);
  twin->to(gpu);
  const Tensor g = uniform(ref->forward(x).sizes(), -1, 1, gen);
  const Tensor want = ref->backward(x, g).clone();
  const Tensor xg = x.to(gpu).contiguous(MemoryFormat::ChannelsLast);
  twin->forward(xg);
  twin->output.fill_(0.0);  // as a later in-place layer would
  CHECK(max_abs_diff(twin->backward(xg, g.to(gpu)), want) == 0);
  twin->forward(xg);
  twin->to(DType::Float32);  // drops the output, which backward does not read
  CHECK(max_abs_diff(twin->backward(xg, g.to(gpu)), want) == 0);
  expect_no_steady_state_allocations(*twin, xg);
}

}  // namespace channels_last_max

// ---- SpatialMaxPooling: its own cases
namespace spatial_max {

TEST_CASE("cudnn.SpatialMaxPooling deterministic=true: nn's gradients, bitwise equal over two runs with ties") {
  cudnn::ScopedConfig flags("deterministic=true");
  pooltwin::expect_pool_twins_match({cfgs[2], cfgs[3], cfgs[7]}, make_nn, make_cu, true, DType::Float32);
  Generator gen(12);
  // all ties, and many ties (values on a coarse grid), under overlapping windows
  const Tensor flat = zeros({4, 8, 18, 20}, DType::Float32, gpu).add(1.0);
  const Tensor coarse = uniform({4, 8, 18, 20}, -2, 2, gen).round().to(gpu);
  for (const Tensor& x : {flat, coarse}) {
    for (bool ceil : {false, true}) {
      INFO(std::string(ceil ? "ceil (adds windows: our kernel)" : "floor (cuDNN)"));
      cudnn::SpatialMaxPooling m(3, 3, 2, 2, 1, 1);
      if (ceil) m.ceil();
      m.to(gpu);
      const Tensor y = m.forward(x).clone();
      const Tensor g = uniform(y.sizes(), -1, 1, gen).to(gpu);
      const Tensor g1 = m.backward(x, g).clone();
      m.forward(x);
      const Tensor g2 = m.backward(x, g).clone();
      CHECK(max_abs_diff(g1, g2) == 0);
      // each gradOutput entry lands on one element of its window: the totals agree
      CHECK(g1.to(DType::Float64).sum().item() == doctest::Approx(g.to(DType::Float64).sum().item()).epsilon(1e-5));
    }
  }
}

TEST_CASE("cudnn.SpatialMaxPooling backward uses the forward's maximum positions") {
  // the maximum is the centre for all four 2x2 windows at stride 1: its gradient is their sum
  const Tensor x = from_vector<float>({0, 1, 0, 1, 9, 1, 0, 1, 0}, {1, 3, 3}).to(gpu);
  cudnn::SpatialMaxPooling m(2, 2, 1, 1);
  m.to(gpu);
  CHECK(m.forward(x).to_vector<float>() == std::vector<float>{9, 9, 9, 9});
  CHECK(m.backward(x, from_vector<float>({1, 2, 3, 4}, {1, 2, 2}).to(gpu)).to_vector<float>() ==
        std::vector<float>{0, 0, 0, 0, 10, 0, 0, 0, 0});
}

TEST_CASE("cudnn.SpatialMaxPooling convert round trips keep ceil mode") {
  Generator gen(5);
  expect_convert_roundtrip(make_nn(cfgs[2]), uniform({2, 3, 7, 9}, -1, 1, gen));
  expect_convert_roundtrip(make_nn(cfgs[3]), uniform({2, 3, 6, 8}, -1, 1, gen));
  const Tensor x = uniform({2, 3, 6, 8}, -1, 1, gen);
  nn::ModulePtr m = make_nn(cfgs[3]);
  const Tensor y = m->forward(x).clone();
  nn::ModulePtr cu = nn::convert(m, cudnn::backend);
  auto& c = dynamic_cast<cudnn::SpatialMaxPooling&>(*cu);
  CHECK(c.ceil_mode);
  CHECK(c.str() == "cudnn.SpatialMaxPooling(3x3, 2,2, 1,1)");
  CHECK(max_abs_diff(cu->forward(x.to(gpu)), y) == 0);
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  CHECK(back->type_name() == "nn.SpatialMaxPooling");
  CHECK(dynamic_cast<nn::SpatialMaxPooling&>(*back).ceil_mode);
  // the twin computed no indices: a backward in nn without its own forward throws
  CHECK_THROWS_WITH_AS(back->backward(x, zeros(y.sizes())), doctest::Contains("after updateOutput on nothing"), Error);
  CHECK(max_abs_diff(back->forward(x), y) == 0);
}

TEST_CASE("cudnn.SpatialMaxPooling printing and errors") {
  CHECK(cudnn::SpatialMaxPooling(2, 2).str() == "cudnn.SpatialMaxPooling(2x2, 2,2)");
  CHECK(cudnn::SpatialMaxPooling(3, 2, 1, 2, 1, 0).str() == "cudnn.SpatialMaxPooling(3x2, 1,2, 1,0)");
  cudnn::SpatialMaxPooling twin(2, 2);
  pooltwin::expect_pool_errors(twin, 2);

  // backward needs the forward of this input (See Note [Pooling backward state])
  cudnn::SpatialMaxPooling fresh(2, 2);
  fresh.to(gpu);
  const Tensor x = zeros({1, 4, 4}, DType::Float32, gpu);
  const Tensor g = zeros({1, 2, 2}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(fresh.backward(x, g),
                       "cudnn.SpatialMaxPooling::updateGradInput: expected updateOutput to have run on an input of "
                       "this shape, dtype and device, got float32 [1 x 4 x 4] on cuda:0 after updateOutput on nothing",
                       Error);
  fresh.forward(zeros({1, 5, 5}, DType::Float32, gpu));
  CHECK_THROWS_WITH_AS(fresh.backward(x, g), doctest::Contains("after updateOutput on float32 [1 x 5 x 5] on cuda:0"),
                       Error);
  fresh.forward(zeros({1, 4, 4}, DType::Float64, gpu));
  CHECK_THROWS_WITH_AS(fresh.backward(x, g), doctest::Contains("after updateOutput on float64 [1 x 4 x 4]"), Error);
  fresh.forward(x);
  CHECK(fresh.backward(x, g).sizes() == x.sizes());
  fresh.to(DType::Float32);  // drops the output; backward reads the copy it kept
  CHECK(fresh.backward(x, g).sizes() == x.sizes());

  // fields changed after construction are checked again
  fresh.padW = 2;
  CHECK_THROWS_WITH_AS(fresh.forward(x),
                       "cudnn.SpatialMaxPooling::updateOutput: expected padding <= kernel / 2, got kernel 2x2, stride "
                       "2,2, padding 2,0",
                       Error);
}

}  // namespace spatial_max

// ---- SpatialAveragePooling: its own cases
namespace spatial_avg {

TEST_CASE("cudnn.SpatialAveragePooling backward on another input than the last forward's: nn's gradient") {
  Generator gen(31);
  for (bool ceil : {false, true}) {
    INFO(std::string(ceil ? "ceil" : "floor"));
    cudnn::SpatialAveragePooling twin(3, 3, 2, 2, 1, 1);
    nn::SpatialAveragePooling ref(3, 3, 2, 2, 1, 1);
    twin.setCountExcludePad();
    ref.setCountExcludePad();
    twin.ceil_mode = ref.ceil_mode = ceil;
    twin.to(gpu);
    twin.forward(uniform({1, 2, 7, 7}, -1, 1, gen).to(gpu));
    const Tensor x = uniform({2, 2, 6, 8}, -1, 1, gen);
    const Tensor g = uniform(ref.outputShape(x), -1, 1, gen);
    CHECK(max_abs_diff(twin.backward(x.to(gpu), g.to(gpu)), ref.backward(x, g)) < 1e-6);
    CHECK(max_abs_diff(twin.output, ref.forward(x)) < 1e-6);  // the forward ran again
    twin.to(DType::Float32);                                  // drops the output: the forward runs again
    CHECK(max_abs_diff(twin.backward(x.to(gpu), g.to(gpu)), ref.backward(x, g)) < 1e-6);
  }
}

TEST_CASE("cudnn.SpatialAveragePooling convert round trips keep ceil mode and count_include_pad") {
  Generator gen(5);
  for (const PoolCfg& c : {cfgs[1], cfgs[2], cfgs[3], cfgs[4]}) {
    INFO(c.what);
    expect_convert_roundtrip(make_nn(c), uniform({2, 3, c.spatial[0], c.spatial[1]}, -1, 1, gen));
  }
  // explicitly (cudnn.torch lost count_include_pad on the way back), where the flag matters
  const Tensor x = uniform({2, 3, 6, 8}, -1, 1, gen);
  auto m = std::make_shared<nn::SpatialAveragePooling>(3, 3, 2, 2, 1, 1);
  m->ceil().setCountExcludePad();
  const Tensor y = m->forward(x).clone();
  REQUIRE(max_abs_diff(nn::SpatialAveragePooling(3, 3, 2, 2, 1, 1).ceil().forward(x), y) > 1e-2);
  nn::ModulePtr cu = nn::convert(m, cudnn::backend);
  REQUIRE(cu->type_name() == "cudnn.SpatialAveragePooling");
  const auto& c = dynamic_cast<cudnn::SpatialAveragePooling&>(*cu);
  CHECK(c.ceil_mode);
  CHECK_FALSE(c.count_include_pad);
  CHECK(max_abs_diff(cu->forward(x.to(gpu)), y) < 1e-6);
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  REQUIRE(back->type_name() == "nn.SpatialAveragePooling");
  const auto& b = dynamic_cast<nn::SpatialAveragePooling&>(*back);
  CHECK(b.ceil_mode);
  CHECK_FALSE(b.count_include_pad);
  CHECK(max_abs_diff(back->forward(x), y) == 0);
}

TEST_CASE("cudnn pooling and LRN twins inside a container: convert both ways keeps every field") {
  Generator gen(6);
  auto seq = std::make_shared<nn::Sequential>();
  auto maxp = std::make_shared<nn::SpatialMaxPooling>(3, 3, 2, 2, 1, 1);
  maxp->ceil();
  auto avgp = std::make_shared<nn::SpatialAveragePooling>(2, 2, 1, 1, 1, 1);
  avgp->ceil().setCountExcludePad();
  seq->add(maxp).add(avgp).add(std::make_shared<nn::SpatialCrossMapLRN>(4, 0.5, 0.6, 1.5));
  const Tensor x = uniform({2, 6, 9, 10}, -1, 1, gen);
  const Tensor y = seq->forward(x).clone();
  nn::convert(seq, cudnn::backend);
  CHECK(seq->get(0)->type_name() == "cudnn.SpatialMaxPooling");
  CHECK(seq->get(1)->type_name() == "cudnn.SpatialAveragePooling");
  CHECK(seq->get(2)->type_name() == "cudnn.SpatialCrossMapLRN");
  CHECK(rel_norm_error(seq->forward(x.to(gpu)), y) < 1e-5);
  nn::convert(seq, nn::backend);
  CHECK(seq->get(0)->str() == "nn.SpatialMaxPooling(3x3, 2,2, 1,1)");
  CHECK(dynamic_cast<nn::SpatialMaxPooling&>(*seq->get(0)).ceil_mode);
  const auto& a = dynamic_cast<nn::SpatialAveragePooling&>(*seq->get(1));
  CHECK(a.type_name() == "nn.SpatialAveragePooling");
  CHECK(a.ceil_mode);
  CHECK_FALSE(a.count_include_pad);
  const auto& l = dynamic_cast<nn::SpatialCrossMapLRN&>(*seq->get(2));
  CHECK(l.type_name() == "nn.SpatialCrossMapLRN");
  CHECK((l.size == 4 && l.alpha == 0.5 && l.beta == 0.6 && l.k == 1.5));
  CHECK(max_abs_diff(seq->forward(x), y) == 0);
}

TEST_CASE("cudnn.SpatialAveragePooling printing and errors") {
  CHECK(cudnn::SpatialAveragePooling(3, 3, 2, 2, 1, 1).str() == "cudnn.SpatialAveragePooling(3x3, 2,2, 1,1)");
  CHECK(cudnn::SpatialAveragePooling(2, 3).str() == "cudnn.SpatialAveragePooling(2x3, 1,1)");
  cudnn::SpatialAveragePooling twin(2, 2, 2, 2);
  pooltwin::expect_pool_errors(twin, 2);
  // the nn constructor checks (and names itself: the twin does not exist yet)
  CHECK_THROWS_WITH_AS(cudnn::SpatialAveragePooling(3, 3, 1, 1, 2, 1),
                       doctest::Contains("expected padding <= kernel / 2, got kernel 3x3, stride 1,1, padding 2,1"),
                       Error);
}

}  // namespace spatial_avg

// ---- VolumetricMaxPooling: its own cases
namespace volumetric_max {

TEST_CASE("cudnn.VolumetricMaxPooling deterministic=true: nn's gradients, bitwise equal over two runs with ties") {
  cudnn::ScopedConfig flags("deterministic=true");
  pooltwin::expect_pool_twins_match({cfgs[1], cfgs[2], cfgs[6]}, make_nn, make_cu, true, DType::Float32, false, 2);
  Generator gen(12);
  const Tensor flat = zeros({2, 4, 6, 10, 12}, DType::Float32, gpu).add(1.0);
  const Tensor coarse = uniform({2, 4, 6, 10, 12}, -2, 2, gen).round().to(gpu);
  for (const Tensor& x : {flat, coarse}) {
    for (bool ceil : {false, true}) {
      INFO(std::string(ceil ? "ceil (adds windows: our kernel)" : "floor (cuDNN)"));
      cudnn::VolumetricMaxPooling m(3, 3, 3, 2, 2, 2, 1, 1, 1);
      if (ceil) m.ceil();
      m.to(gpu);
      const Tensor y = m.forward(x).clone();
      const Tensor g = uniform(y.sizes(), -1, 1, gen).to(gpu);
      const Tensor g1 = m.backward(x, g).clone();
      m.forward(x);
      const Tensor g2 = m.backward(x, g).clone();
      CHECK(max_abs_diff(g1, g2) == 0);
      CHECK(g1.to(DType::Float64).sum().item() == doctest::Approx(g.to(DType::Float64).sum().item()).epsilon(1e-5));
    }
  }
}

TEST_CASE("cudnn.VolumetricMaxPooling convert round trips keep ceil mode") {
  Generator gen(5);
  expect_convert_roundtrip(make_nn(cfgs[1]), uniform({2, 2, 5, 6, 7}, -1, 1, gen));
  expect_convert_roundtrip(make_nn(cfgs[2]), uniform({2, 2, 6, 6, 8}, -1, 1, gen));
  const Tensor x = uniform({2, 2, 6, 6, 8}, -1, 1, gen);
  nn::ModulePtr m = make_nn(cfgs[2]);
  const Tensor y = m->forward(x).clone();
  nn::ModulePtr cu = nn::convert(m, cudnn::backend);
  const auto& c = dynamic_cast<cudnn::VolumetricMaxPooling&>(*cu);
  CHECK(c.ceil_mode);
  CHECK(c.str() == "cudnn.VolumetricMaxPooling(3x3x3, 2,2,2, 1,1,1)");
  CHECK(max_abs_diff(cu->forward(x.to(gpu)), y) == 0);
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  CHECK(back->type_name() == "nn.VolumetricMaxPooling");
  CHECK(dynamic_cast<nn::VolumetricMaxPooling&>(*back).ceil_mode);
  CHECK(max_abs_diff(back->forward(x), y) == 0);
}

TEST_CASE("cudnn.VolumetricMaxPooling printing and errors") {
  CHECK(cudnn::VolumetricMaxPooling(2, 2, 2).str() == "cudnn.VolumetricMaxPooling(2x2x2, 2,2,2)");
  CHECK(cudnn::VolumetricMaxPooling(1, 3, 2, 1, 2, 2, 0, 1, 1).str() ==
        "cudnn.VolumetricMaxPooling(1x3x2, 1,2,2, 0,1,1)");
  cudnn::VolumetricMaxPooling twin(2, 2, 2);
  pooltwin::expect_pool_errors(twin, 3);
  cudnn::VolumetricMaxPooling fresh(2, 2, 2);
  fresh.to(gpu);
  const Tensor x = zeros({1, 4, 4, 4}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(fresh.backward(x, zeros({1, 2, 2, 2}, DType::Float32, gpu)),
                       doctest::Contains("cudnn.VolumetricMaxPooling::updateGradInput: expected updateOutput to have "
                                         "run on an input of this shape"),
                       Error);
}

}  // namespace volumetric_max

// ---- VolumetricAveragePooling: its own cases
namespace volumetric_avg {

TEST_CASE("cudnn.VolumetricAveragePooling convert round trips keep ceil mode and count_include_pad") {
  Generator gen(5);
  for (const PoolCfg& c : {cfgs[1], cfgs[2], cfgs[3], cfgs[4]}) {
    INFO(c.what);
    expect_convert_roundtrip(make_nn(c), uniform({2, 2, c.spatial[0], c.spatial[1], c.spatial[2]}, -1, 1, gen));
  }
  // explicitly (cudnn.torch lost count_include_pad on the way back), where the flag matters
  const Tensor x = uniform({2, 2, 6, 6, 8}, -1, 1, gen);
  auto m = std::make_shared<nn::VolumetricAveragePooling>(3, 3, 3, 2, 2, 2, 1, 1, 1);
  m->ceil().setCountExcludePad();
  const Tensor y = m->forward(x).clone();
  REQUIRE(max_abs_diff(nn::VolumetricAveragePooling(3, 3, 3, 2, 2, 2, 1, 1, 1).ceil().forward(x), y) > 1e-2);
  nn::ModulePtr cu = nn::convert(m, cudnn::backend);
  REQUIRE(cu->type_name() == "cudnn.VolumetricAveragePooling");
  const auto& c = dynamic_cast<cudnn::VolumetricAveragePooling&>(*cu);
  CHECK(c.ceil_mode);
  CHECK_FALSE(c.count_include_pad);
  CHECK(max_abs_diff(cu->forward(x.to(gpu)), y) < 1e-6);
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  REQUIRE(back->type_name() == "nn.VolumetricAveragePooling");
  const auto& b = dynamic_cast<nn::VolumetricAveragePooling&>(*back);
  CHECK(b.ceil_mode);
  CHECK_FALSE(b.count_include_pad);
  CHECK(max_abs_diff(back->forward(x), y) == 0);
}

TEST_CASE("cudnn.VolumetricAveragePooling printing and errors") {
  CHECK(cudnn::VolumetricAveragePooling(2, 2, 2).str() == "cudnn.VolumetricAveragePooling(2x2x2, 2,2,2)");
  CHECK(cudnn::VolumetricAveragePooling(3, 3, 3, 2, 2, 2, 1, 1, 1).str() ==
        "cudnn.VolumetricAveragePooling(3x3x3, 2,2,2, 1,1,1)");
  cudnn::VolumetricAveragePooling twin(2, 2, 2);
  pooltwin::expect_pool_errors(twin, 3);
}

}  // namespace volumetric_avg
