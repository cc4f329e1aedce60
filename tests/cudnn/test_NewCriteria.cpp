// test_NewCriteria.cpp: the cudnn elementwise criteria and cudnn.CTCCriterion against their nn
// criteria. Elementwise (their table rows in tests/support/CriterionTable.h run the family checks
// too): every PyTorch reference case's options and weights in float32 (TF32 off), float64,
// float16 and bfloat16; NaN and +-Inf. CTC: cuDNN's path (float32, blank 0) and the fallbacks
// (float64, 16-bit, blank != 0, impossible alignments, NaN), every reduction and zeroInfinity,
// the steps past each input length, empty batches; a convert round trip of each.
#include <doctest/doctest.h>

#include <cmath>

#include "convert/Convert.h"
#include "cudnn/Config.h"
#include "cudnn/modules.h"
#include "tests/support/NewCriteria.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
}  // namespace

TEST_CASE("elementwise criterion twins match nn on every reference case, in every dtype") {
  cudnn::ScopedConfig scoped("allow_tf32=false");
  for (const ReferenceCriterionCase& c : reference_criterion_cases()) {
    if (c.type == "CTCCriterion") continue;
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      INFO(c.name, " in ", name(dt));
      nn::CriterionPtr ref = make_elementwise_criterion(c.type, c.config, c.weights, c.posWeight);
      nn::CriterionPtr twin =
          nn::convert(make_elementwise_criterion(c.type, c.config, c.weights, c.posWeight), cudnn::backend);
      CHECK(twin->type_name() == "cudnn." + c.type);
      if (c.name == "BCECriterion.100" && dt != DType::Float64) continue;  // 1e12 gradients overflow 16-bit
      expect_twin_criterion_matches(*ref, *twin, c.input, c.target, dt, TwinTolerance::for_dtype(dt));
    }
  }
}

TEST_CASE("elementwise criterion twins: NaN and +-Inf give nn's loss and gradient") {
  Generator gen(4401);
  for (const ReferenceCriterionCase& c : reference_criterion_cases()) {
    if (c.type == "CTCCriterion" || c.input.numel() < 6) continue;
    INFO(c.name);
    nn::CriterionPtr ref = make_elementwise_criterion(c.type, c.config, c.weights, c.posWeight);
    nn::CriterionPtr twin =
        nn::convert(make_elementwise_criterion(c.type, c.config, c.weights, c.posWeight), cudnn::backend);
    expect_twin_criterion_nonfinite_matches(*ref, *twin, c.input, c.target);
  }
}

TEST_CASE("elementwise criterion twins: convert round trip") {
  for (const ReferenceCriterionCase& c : reference_criterion_cases()) {
    if (c.type == "CTCCriterion") continue;
    INFO(c.name);
    expect_criterion_convert_roundtrip(make_elementwise_criterion(c.type, c.config, c.weights, c.posWeight),
                                       c.input.to(DType::Float32), c.target);
  }
}

namespace {
// The twin against nn on a CTC case, the input in `dt` (nn sees the same rounded values).
void expect_ctc_twin_matches(const ReferenceCriterionCase& c, DType dt, double tol) {
  auto ref = make_ctc_criterion(c.config);
  auto twin = nn::convert(nn::CriterionPtr(make_ctc_criterion(c.config)), cudnn::backend);
  auto* t = dynamic_cast<nn::CTCCriterion*>(twin.get());
  REQUIRE(t);
  CHECK(twin->type_name() == "cudnn.CTCCriterion");
  const Tensor x = c.input.to(dt).to(DType::Float64);
  const double want = ref->forward(x, c.target, c.inputLengths, c.targetLengths);
  const double got = t->forward(x.to(gpu, dt), c.target.to(gpu), c.inputLengths, c.targetLengths.to(gpu));
  if (std::isfinite(want)) {
    CHECK(got == doctest::Approx(want).epsilon(tol));
  } else {
    CHECK((std::isnan(want) ? std::isnan(got) : got == want));
  }
  CHECK(t->losses.is_cuda());
  expect_same_nonfinite("losses", t->losses, ref->losses, tol);
  const Tensor g = t->backward(x.to(gpu, dt), c.target.to(gpu), c.inputLengths, c.targetLengths);
  CHECK(g.is_cuda());
  CHECK(g.dtype() == dt);
  expect_same_nonfinite("gradInput", g, ref->backward(x, c.target, c.inputLengths, c.targetLengths), tol);
}
}  // namespace

TEST_CASE("cudnn.CTCCriterion matches nn: cuDNN's path and every fallback, every reduction") {
  for (const ReferenceCriterionCase& c : reference_criterion_cases()) {
    if (c.type != "CTCCriterion") continue;
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      INFO(c.name, " in ", name(dt));
      expect_ctc_twin_matches(c, dt, dt == DType::Float64 ? 1e-10 : dt == DType::Float32 ? 1e-4 : 1e-2);
    }
  }
}

TEST_CASE("cudnn.CTCCriterion: NaN in the input, an empty batch, the plain interface, errors") {
  for (const ReferenceCriterionCase& c : reference_criterion_cases()) {
    if (c.name != "CTCCriterion.0") continue;
    ReferenceCriterionCase n = c;
    n.input = c.input.clone();
    n.input.set({3, 1, 2}, NAN);
    expect_ctc_twin_matches(n, DType::Float32, 1e-4);  // a NaN cost sends cuDNN's answer to the fallback
  }
  cudnn::CTCCriterion e;
  e.to(gpu);
  CHECK(e.forward(zeros({5, 0, 4}, DType::Float32, gpu), zeros({0, 2}, DType::Int64, gpu)) == 0);
  CHECK(e.backward(zeros({5, 0, 4}, DType::Float32, gpu), zeros({0, 2}, DType::Int64, gpu)).sizes() == Shape{5, 0, 4});
  cudnn::CTCCriterion ctc;
  CHECK(ctc.str() == "cudnn.CTCCriterion(blank=0, reduction=mean)");
  CHECK_THROWS_WITH_AS(ctc.forward(zeros({5, 2, 4}, DType::Float32, gpu), from_vector<int64_t>({1, 4, 2, 2}, {2, 2})),
                       "cudnn.CTCCriterion::updateOutput: expected target labels in [0, 3] other than blank 0 (input "
                       "[5 x 2 x 4]), got 4 at targets[0, 1]",
                       Error);
  CHECK_THROWS_WITH_AS(ctc.forward(zeros({5, 2, 4}), from_vector<int64_t>({1, 2, 2, 2}, {2, 2})),
                       doctest::Contains("cudnn.CTCCriterion::updateOutput: expected input on a CUDA device"), Error);
}
