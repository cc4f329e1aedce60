// test_SpatialAveragePooling.cpp: cudnn.SpatialAveragePooling against nn.SpatialAveragePooling
// (tests/support/PoolingTwinChecks.h): count_include_pad on and off, floor and ceil mode (ceil adding
// windows that run past the padding, ceil dropping a window that would start in the right
// padding, ceil without padding), overlapping windows, odd sizes, batch / batch 1 / non-batch,
// float32, float64, float16, bfloat16, a non-contiguous input; backward after a forward on
// another input; convert round trips that keep ceil mode and count_include_pad; errors.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/SpatialAveragePooling.h"
#include "cudnn/SpatialCrossMapLRN.h"
#include "cudnn/SpatialMaxPooling.h"
#include "nn/Sequential.h"
#include "nn/SpatialAveragePooling.h"
#include "nn/SpatialCrossMapLRN.h"
#include "nn/SpatialMaxPooling.h"
#include "tests/support/PoolingTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;
using pooltwin::Ceil;
using pooltwin::gpu;
using pooltwin::PoolCfg;

namespace {

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

}  // namespace

TEST_CASE("cudnn.SpatialAveragePooling matches nn in float32 and float64 (count_include_pad on and off, ceil)") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::Float32);
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::Float64);
}

TEST_CASE("cudnn.SpatialAveragePooling matches nn in float16 and bfloat16") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::Float16);
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::BFloat16);
}

TEST_CASE("cudnn.SpatialAveragePooling matches nn with a non-contiguous input") {
  pooltwin::expect_pool_twins_match(cfgs, make_nn, make_cu, false, DType::Float32, true);
}

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
    twin.to(DType::Float32);  // drops the output: the forward runs again
    CHECK(max_abs_diff(twin.backward(x.to(gpu), g.to(gpu)), ref.backward(x, g)) < 1e-6);
  }
}

TEST_CASE("cudnn.SpatialAveragePooling gradients unaffected by an in-place layer writing into the output") {
  pooltwin::expect_backward_ignores_output_changes({cfgs[2], cfgs[4], cfgs[11]}, make_nn, make_cu, false);
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

TEST_CASE("cudnn.SpatialAveragePooling steady state: no device allocation after a warm-up") {
  Generator gen(8);
  for (const PoolCfg& c : {cfgs[2], cfgs[4]}) {
    nn::ModulePtr m = make_cu(c);
    m->to(gpu);
    expect_no_steady_state_allocations(*m, uniform({2, 3, c.spatial[0], c.spatial[1]}, -1, 1, gen).to(gpu));
  }
}

TEST_CASE(
    "cudnn.SpatialAveragePooling: NaN and +-Inf inputs give nn's values, floor and ceil mode (Note [NaN and Inf])") {
  pooltwin::expect_pool_twins_nonfinite(cfgs, make_nn, make_cu, false);
}
