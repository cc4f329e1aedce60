// test_SpatialMaxPooling.cpp: cudnn.SpatialMaxPooling against nn.SpatialMaxPooling
// (tests/support/PoolingTwinChecks.h): floor and ceil mode (ceil adding windows, ceil dropping a window
// that would start in the right padding, ceil without padding), padding, overlapping windows,
// odd sizes, batch / batch 1 / non-batch, float32, float64, float16, bfloat16, a non-contiguous
// input; deterministic max pooling; convert round trips; errors.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/Config.h"
#include "cudnn/SpatialMaxPooling.h"
#include "nn/SpatialMaxPooling.h"
#include "tests/support/PoolingTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;
using pooltwin::Ceil;
using pooltwin::gpu;
using pooltwin::PoolCfg;

namespace {

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

}  // namespace

TEST_CASE("cudnn.SpatialMaxPooling matches nn in float32 and float64 (floor, ceil, padding, overlap, batch and not)") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::Float32);
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::Float64);
}

TEST_CASE("cudnn.SpatialMaxPooling matches nn in float16 and bfloat16") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::Float16);
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::BFloat16);
}

TEST_CASE("cudnn.SpatialMaxPooling matches nn with a non-contiguous input") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, true, DType::Float32, true);
}

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

TEST_CASE("cudnn.SpatialMaxPooling gradients unaffected by an in-place layer writing into the output") {
  pooltwin::expect_backward_ignores_output_changes({cfgs[2], cfgs[3], cfgs[8]}, make_nn, make_cu, true);
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

TEST_CASE("cudnn.SpatialMaxPooling steady state: no device allocation after a warm-up") {
  Generator gen(8);
  for (const PoolCfg& c : {cfgs[2], cfgs[3]}) {
    nn::ModulePtr m = make_cu(c);
    m->to(gpu);
    expect_no_steady_state_allocations(*m, uniform({2, 3, c.spatial[0], c.spatial[1]}, -1, 1, gen).to(gpu));
  }
}

TEST_CASE("cudnn.SpatialMaxPooling: NaN and +-Inf inputs give nn's values, floor and ceil mode (Note [NaN and Inf])") {
  pooltwin::expect_pool_twins_nonfinite(cfgs, make_nn, make_cu, true);
}
