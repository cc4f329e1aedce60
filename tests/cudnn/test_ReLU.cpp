// test_ReLU.cpp: cudnn.ReLU against nn.ReLU (tests/support/PointwiseTwinChecks.h), in float32 with
// TF32 off, float64, float16, bfloat16, 1-D to 5-D inputs, in place and not.
#include <doctest/doctest.h>

#include "cudnn/Config.h"
#include "cudnn/ReLU.h"
#include "nn/ReLU.h"
#include "tests/support/PointwiseTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {
// the one configuration: nn.ReLU(inplace)
const std::vector<std::pair<PointwiseFactory, PointwiseFactory>> variants = {
    {[](bool ip) { return std::make_shared<nn::ReLU>(ip); }, [](bool ip) { return std::make_shared<cudnn::ReLU>(ip); }},
};
}  // namespace

TEST_CASE("cudnn.ReLU matches nn.ReLU in float32 (TF32 off) and float64, 1-D to 5-D, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (auto& [makeNn, makeCu] : variants) {
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float32, false, -2, 2);
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float64, false, -2, 2);
  }
}

TEST_CASE("cudnn.ReLU matches nn.ReLU in float16 and bfloat16, in place and not") {
  for (auto& [makeNn, makeCu] : variants) {
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float16, false, -2, 2);
    expect_pointwise_twin_matches(makeNn, makeCu, DType::BFloat16, false, -2, 2);
  }
}

TEST_CASE("cudnn.ReLU matches nn.ReLU with a non-contiguous input, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_twin_matches(makeNn, makeCu, DType::Float32, true, -2, 2);
}

TEST_CASE("cudnn.ReLU in place shares the input's and gradOutput's storage, with nn's values") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_in_place(makeNn, makeCu);
}

TEST_CASE("cudnn.ReLU convert round trip, printing and errors") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_convert_and_errors(makeNn, makeCu);
  CHECK(cudnn::ReLU().str() == "cudnn.ReLU");
  CHECK(cudnn::ReLU(true).str() == "cudnn.ReLU");
}

TEST_CASE("cudnn.ReLU steady state: no device allocation after a warm-up") {
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

TEST_CASE("cudnn.ReLU: NaN and +-Inf inputs give nn's values (Note [NaN and Inf])") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_nonfinite_matches(makeNn, makeCu);
}
