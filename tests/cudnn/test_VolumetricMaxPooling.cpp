// test_VolumetricMaxPooling.cpp: cudnn.VolumetricMaxPooling against nn.VolumetricMaxPooling
// (tests/support/PoolingTwinChecks.h): floor and ceil mode (ceil adding windows, ceil dropping a
// window that would start in the right padding, ceil without padding), padding, overlapping
// windows, odd sizes, batch / batch 1 / non-batch, float32, float64, float16, bfloat16, a
// non-contiguous input; deterministic max pooling; convert round trips; errors.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/Config.h"
#include "cudnn/VolumetricMaxPooling.h"
#include "nn/VolumetricMaxPooling.h"
#include "tests/support/PoolingTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;
using pooltwin::Ceil;
using pooltwin::gpu;
using pooltwin::PoolCfg;

namespace {

// (kT, kH, kW), (dT, dH, dW), (padT, padH, padW), (T, H, W); Torch prints kT x kW x kH
const std::vector<PoolCfg> cfgs = {
    {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {4, 6, 6}, Ceil::Off, true, "2x2x2, 2,2,2 (floor, exact fit)"},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {5, 6, 7}, Ceil::Off, true, "3x3x3, 2,2,2, 1,1,1 (floor, overlap, padding)"},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {6, 6, 8}, Ceil::Adds, true, "3x3x3, 2,2,2, 1,1,1 ceil (adds in every dim)"},
    {{2, 3, 3}, {2, 2, 2}, {1, 1, 1}, {5, 6, 7}, Ceil::Adds, true, "2x3x3, 2,2,2, 1,1,1 ceil (adds in H, drops in T)"},
    {{2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {5, 5, 9}, Ceil::Drops, true, "2x2x2, 2,2,2, 1,1,1 ceil (right-padding windows dropped)"},
    {{2, 3, 2}, {2, 2, 2}, {0, 0, 0}, {5, 6, 7}, Ceil::Adds, true, "2x2x3, 2,2,2 ceil without padding"},
    {{3, 2, 2}, {1, 1, 1}, {1, 1, 1}, {4, 5, 5}, Ceil::Off, true, "3x2x2, 1,1,1, 1,1,1 (stride 1 < kernel)"},
    {{1, 3, 2}, {1, 2, 2}, {0, 1, 1}, {3, 7, 8}, Ceil::Off, true, "1x2x3, 1,2,2, 0,1,1 (depth-1 kernel)"},
    {{2, 3, 1}, {3, 2, 1}, {1, 1, 0}, {7, 5, 6}, Ceil::Drops, true, "2x1x3, 3,1,2, 1,0,1 ceil (a T window dropped)"},
    {{3, 2, 3}, {2, 1, 3}, {1, 1, 1}, {5, 6, 7}, Ceil::NoEffect, true, "3x3x2, 2,3,1, 1,1,1 ceil (no effect)"},
};

nn::ModulePtr make_nn(const PoolCfg& c) { return pooltwin::make_pool<nn::VolumetricMaxPooling>(c); }
nn::ModulePtr make_cu(const PoolCfg& c) { return pooltwin::make_pool<cudnn::VolumetricMaxPooling>(c); }

}  // namespace

TEST_CASE("cudnn.VolumetricMaxPooling matches nn in float32 and float64 (floor, ceil, padding, overlap, batch and not)") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::Float32, false, 2);
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::Float64, false, 2);
}

TEST_CASE("cudnn.VolumetricMaxPooling matches nn in float16 and bfloat16") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::Float16, false, 2);
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::BFloat16, false, 2);
}

TEST_CASE("cudnn.VolumetricMaxPooling matches nn with a non-contiguous input") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::Float32, true, 2);
}

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

TEST_CASE("cudnn.VolumetricMaxPooling gradients unaffected by an in-place layer writing into the output") {
  pooltwin::expect_backward_ignores_output_changes({cfgs[1], cfgs[2]}, make_nn, make_cu, true, 2);
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

TEST_CASE("cudnn.VolumetricMaxPooling steady state: no device allocation after a warm-up") {
  Generator gen(8);
  for (const PoolCfg& c : {cfgs[1], cfgs[2]}) {
    nn::ModulePtr m = make_cu(c);
    m->to(gpu);
    expect_no_steady_state_allocations(*m,
                                       uniform({2, 2, c.spatial[0], c.spatial[1], c.spatial[2]}, -1, 1, gen).to(gpu));
  }
}

TEST_CASE(
    "cudnn.VolumetricMaxPooling: NaN and +-Inf inputs give nn's values, floor and ceil mode (Note [NaN and Inf])") {
  pooltwin::expect_pool_twins_nonfinite(cfgs, make_nn, make_cu, true);
}
