// test_VolumetricAveragePooling.cpp: cudnn.VolumetricAveragePooling against
// nn.VolumetricAveragePooling (tests/support/PoolingTwinChecks.h): count_include_pad on and off, floor
// and ceil mode (ceil adding windows, ceil dropping a window that would start in the right
// padding, ceil without padding), overlapping windows, odd sizes, batch / batch 1 / non-batch,
// float32, float64, float16, bfloat16, a non-contiguous input; convert round trips that keep
// ceil mode and count_include_pad; errors.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/VolumetricAveragePooling.h"
#include "nn/VolumetricAveragePooling.h"
#include "tests/support/PoolingTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;
using pooltwin::Ceil;
using pooltwin::gpu;
using pooltwin::PoolCfg;

namespace {

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

}  // namespace

TEST_CASE("cudnn.VolumetricAveragePooling matches nn in float32 and float64 (count_include_pad on and off, ceil)") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::Float32, false, 2);
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::Float64, false, 2);
}

TEST_CASE("cudnn.VolumetricAveragePooling matches nn in float16 and bfloat16") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::Float16, false, 2);
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::BFloat16, false, 2);
}

TEST_CASE("cudnn.VolumetricAveragePooling matches nn with a non-contiguous input") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::Float32, true, 2);
}

TEST_CASE("cudnn.VolumetricAveragePooling gradients unaffected by an in-place layer writing into the output") {
  pooltwin::expect_backward_ignores_output_changes({cfgs[2], cfgs[4]}, make_nn, make_cu, false, 2);
}

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

TEST_CASE("cudnn.VolumetricAveragePooling steady state: no device allocation after a warm-up") {
  Generator gen(8);
  for (const PoolCfg& c : {cfgs[2], cfgs[4]}) {
    nn::ModulePtr m = make_cu(c);
    m->to(gpu);
    expect_no_steady_state_allocations(*m,
                                       uniform({2, 2, c.spatial[0], c.spatial[1], c.spatial[2]}, -1, 1, gen).to(gpu));
  }
}

TEST_CASE(
    "cudnn.VolumetricAveragePooling: NaN and +-Inf inputs give nn's values, floor and ceil mode (Note [NaN and Inf])") {
  pooltwin::expect_pool_twins_nonfinite(cfgs, make_nn, make_cu, false);
}
