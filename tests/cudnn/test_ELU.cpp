// test_ELU.cpp: cudnn.ELU against nn.ELU (tests/support/PointwiseTwinChecks.h), in float32 with
// TF32 off, float64, float16, bfloat16, 1-D to 5-D inputs, in place and not.
#include <doctest/doctest.h>

#include "cudnn/Config.h"
#include "cudnn/ELU.h"
#include "nn/ELU.h"
#include "tests/support/PointwiseTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {
// alpha 1 (the default) and 0.3
template <class M>
PointwiseFactory make(double alpha) {
  return [alpha](bool ip) { return std::make_shared<M>(alpha, ip); };
}
const std::vector<std::pair<PointwiseFactory, PointwiseFactory>> variants = {
    {make<nn::ELU>(1.0), make<cudnn::ELU>(1.0)}, {make<nn::ELU>(0.3), make<cudnn::ELU>(0.3)}};
}  // namespace

TEST_CASE("cudnn.ELU matches nn.ELU in float32 (TF32 off) and float64, 1-D to 5-D, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (auto& [makeNn, makeCu] : variants) {
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float32, false, -3, 1.5);
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float64, false, -3, 1.5);
  }
}

TEST_CASE("cudnn.ELU matches nn.ELU in float16 and bfloat16, in place and not") {
  for (auto& [makeNn, makeCu] : variants) {
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float16, false, -3, 1.5);
    expect_pointwise_twin_matches(makeNn, makeCu, DType::BFloat16, false, -3, 1.5);
  }
}

TEST_CASE("cudnn.ELU matches nn.ELU with a non-contiguous input, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_twin_matches(makeNn, makeCu, DType::Float32, true, -3, 1.5);
}

TEST_CASE("cudnn.ELU in place shares the input's and gradOutput's storage, with nn's values") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_in_place(makeNn, makeCu);
}

TEST_CASE("cudnn.ELU convert round trip, printing and errors") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_convert_and_errors(makeNn, makeCu);
  CHECK(cudnn::ELU().str() == "cudnn.ELU (alpha:1.000000)");
  CHECK(cudnn::ELU(0.5, true).str() == "cudnn.ELU (alpha:0.500000)");
  CHECK(cudnn::ELU(0.5, true).alpha == 0.5);
}

TEST_CASE("cudnn.ELU steady state: no device allocation after a warm-up") {
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

TEST_CASE("cudnn.ELU: NaN and +-Inf inputs give nn's values (Note [NaN and Inf])") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_nonfinite_matches(makeNn, makeCu);
}
