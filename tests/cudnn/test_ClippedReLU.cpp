// test_ClippedReLU.cpp: cudnn.ClippedReLU against nn.ClippedReLU (tests/support/PointwiseTwinChecks.h), in float32 with
// TF32 off, float64, float16, bfloat16, 1-D to 5-D inputs, in place and not.
#include <doctest/doctest.h>

#include "cudnn/ClippedReLU.h"
#include "cudnn/Config.h"
#include "nn/ClippedReLU.h"
#include "tests/support/PointwiseTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {
// ceilings 1 and 6 (relu6); inputs reach past them so that clipped entries are checked
template <class M>
PointwiseFactory make(double ceiling) {
  return [ceiling](bool ip) { return std::make_shared<M>(ceiling, ip); };
}
const std::vector<std::pair<PointwiseFactory, PointwiseFactory>> variants = {
    {make<nn::ClippedReLU>(1.0), make<cudnn::ClippedReLU>(1.0)},
    {make<nn::ClippedReLU>(6.0), make<cudnn::ClippedReLU>(6.0)}};
}  // namespace

TEST_CASE("cudnn.ClippedReLU matches nn.ClippedReLU in float32 (TF32 off) and float64, 1-D to 5-D, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (auto& [makeNn, makeCu] : variants) {
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float32, false, -2, 7);
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float64, false, -2, 7);
  }
}

TEST_CASE("cudnn.ClippedReLU matches nn.ClippedReLU in float16 and bfloat16, in place and not") {
  for (auto& [makeNn, makeCu] : variants) {
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float16, false, -2, 7);
    expect_pointwise_twin_matches(makeNn, makeCu, DType::BFloat16, false, -2, 7);
  }
}

TEST_CASE("cudnn.ClippedReLU matches nn.ClippedReLU with a non-contiguous input, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_twin_matches(makeNn, makeCu, DType::Float32, true, -2, 7);
}

TEST_CASE("cudnn.ClippedReLU in place shares the input's and gradOutput's storage, with nn's values") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_in_place(makeNn, makeCu);
}

TEST_CASE("cudnn.ClippedReLU convert round trip, printing and errors") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_convert_and_errors(makeNn, makeCu);
  CHECK(cudnn::ClippedReLU(6).str() == "cudnn.ClippedReLU");
  CHECK(cudnn::ClippedReLU(6, true).ceiling == 6);
  CHECK_THROWS_WITH_AS(cudnn::ClippedReLU(0), "nn.ClippedReLU: expected a positive finite ceiling, got 0", Error);
}

// In place cuDNN would see y for x, and clipped entries (y = ceiling) would pass the
// gradient: the in-place gradient comes from y (Note [In-place activation gradients]).
TEST_CASE("cudnn.ClippedReLU in place: no gradient through clipped entries, in every dtype") {
  const Device gpu = Device::cuda(0);
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO(std::string(name(dt)));
    cudnn::ClippedReLU m(1.0, true);
    m.to(gpu);
    m.to(dt);
    Tensor x = from_vector<double>({-1, 0.5, 1, 1.5, 3, 0.25}, {6}).to(gpu, dt);
    m.forward(x);
    CHECK(x.to_vector<double>() == std::vector<double>{0, 0.5, 1, 1, 1, 0.25});
    Tensor g = from_vector<double>({1, 2, 3, 4, 5, 6}, {6}).to(gpu, dt);
    const Tensor gi = m.backward(x, g);
    CHECK(gi.is_same_view(g));
    // nn takes the kink at y = ceiling as clipped (gradient 0), as here
    CHECK(g.to_vector<double>() == std::vector<double>{0, 2, 0, 0, 0, 6});
  }
}

TEST_CASE("cudnn.ClippedReLU steady state: no device allocation after a warm-up") {
  const Device gpu = Device::cuda(0);
  Generator gen(47);
  for (auto& [makeNn, makeCu] : variants) {
    for (bool inplace : {false, true}) {
      nn::ModulePtr m = makeCu(inplace);
      m->to(gpu);
      expect_no_steady_state_allocations(*m, uniform({4, 5, 6}, -2, 2, gen).to(gpu));
    }
  }
}

TEST_CASE("cudnn.ClippedReLU: NaN and +-Inf inputs give nn's values (Note [NaN and Inf])") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_nonfinite_matches(makeNn, makeCu);
}
