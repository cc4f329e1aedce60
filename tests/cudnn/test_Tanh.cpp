// test_Tanh.cpp: cudnn.Tanh against nn.Tanh (tests/support/PointwiseTwinChecks.h), in float32 with
// TF32 off, float64, float16, bfloat16, 1-D to 5-D inputs, in place and not.
#include <doctest/doctest.h>

#include "cudnn/Config.h"
#include "cudnn/Tanh.h"
#include "nn/Tanh.h"
#include "tests/support/PointwiseTwinChecks.h"
#include "tests/support/SteadyState.h"

using namespace tensor;
using namespace testing;

namespace {
// nn.Tanh takes no arguments; in place through the public field, as nn.Pointwise allows
template <class M>
nn::ModulePtr make(bool ip) {
  auto m = std::make_shared<M>();
  m->inplace = ip;
  return m;
}
const std::vector<std::pair<PointwiseFactory, PointwiseFactory>> variants = {{make<nn::Tanh>, make<cudnn::Tanh>}};
}  // namespace

TEST_CASE("cudnn.Tanh matches nn.Tanh in float32 (TF32 off) and float64, 1-D to 5-D, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (auto& [makeNn, makeCu] : variants) {
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float32, false, -3, 3);
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float64, false, -3, 3);
  }
}

TEST_CASE("cudnn.Tanh matches nn.Tanh in float16 and bfloat16, in place and not") {
  for (auto& [makeNn, makeCu] : variants) {
    expect_pointwise_twin_matches(makeNn, makeCu, DType::Float16, false, -3, 3);
    expect_pointwise_twin_matches(makeNn, makeCu, DType::BFloat16, false, -3, 3);
  }
}

TEST_CASE("cudnn.Tanh matches nn.Tanh with a non-contiguous input, in place and not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_twin_matches(makeNn, makeCu, DType::Float32, true, -3, 3);
}

TEST_CASE("cudnn.Tanh in place shares the input's and gradOutput's storage, with nn's values") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_in_place(makeNn, makeCu);
}

TEST_CASE("cudnn.Tanh convert round trip, printing and errors") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_convert_and_errors(makeNn, makeCu);
  CHECK(cudnn::Tanh().str() == "cudnn.Tanh");
}

TEST_CASE("cudnn.Tanh steady state: no device allocation after a warm-up") {
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

TEST_CASE("cudnn.Tanh: NaN and +-Inf inputs give nn's values (Note [NaN and Inf])") {
  for (auto& [makeNn, makeCu] : variants) expect_pointwise_nonfinite_matches(makeNn, makeCu);
}
