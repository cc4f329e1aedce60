// test_CriterionBadInput.cpp: the criteria's bad-input matrix on the GPU, over the cases of
// tests/support/CriterionTable.h (the CPU half is tests/nn/test_CriterionBadInput.cpp): each
// row's cudnn twin (from nn::convert) on CUDA tensors does what nn does on the CPU, both in
// float64: where nn throws, the twin throws too, naming its own type and what nn's message names;
// where nn gives a loss, the twin gives the same loss (NaN, the same infinity, or close) and the
// same gradInput element by element (NaN/Inf included), an empty batch and a non-contiguous
// input included.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "convert/Convert.h"
#include "tests/support/CriterionTable.h"
#include "tests/support/ErrorText.h"
#include "tests/support/NonContiguous.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

// 0 finite, 1 NaN, 2 +Inf, 3 -Inf
int kind_of(double v) { return std::isnan(v) ? 1 : std::isinf(v) ? (v > 0 ? 2 : 3) : 0; }

}  // namespace

TEST_CASE("bad-input matrix (cudnn criteria): every row converts to its twin") {
  for (const CriterionSpec& s : criterion_table()) {
    INFO(s.type);
    CHECK(nn::convert(s.make(), cudnn::backend)->type_name() == "cudnn." + s.type);
  }
}

TEST_CASE("bad-input matrix (cudnn criteria): every case gives nn's error or nn's loss and gradInput") {
  for (const CriterionSpec& s : criterion_table()) {
    for (const CriterionCase& c : criterion_cases(s)) {
      INFO(s.type, ": ", c.name);
      nn::CriterionPtr ref = s.make(), twin = nn::convert(s.make(), cudnn::backend);
      const Tensor x = c.noncontiguous ? noncontiguous_copy(c.input) : c.input;
      const Tensor xg = c.noncontiguous ? noncontiguous_copy(c.input.to(gpu)) : c.input.to(gpu);
      const Tensor tg = c.target.to(gpu);
      double loss = 0, lossg = 0;
      const std::string e = error_of([&] { loss = ref->forward(x, c.target); });
      const std::string eg = error_of([&] { lossg = twin->forward(xg, tg); });
      INFO("nn: ", e);
      INFO("twin: ", eg);
      CHECK(c.error == (e != "(no error)"));  // the table says what nn does
      if (e != "(no error)") {
        CHECK(has(eg, "cudnn." + s.type + "::"));
        CHECK(has(eg, c.names));
        continue;
      }
      REQUIRE(eg == "(no error)");
      CHECK(kind_of(lossg) == kind_of(loss));
      if (kind_of(loss) == 0 && kind_of(lossg) == 0) CHECK(lossg == doctest::Approx(loss).epsilon(1e-9));
      const Tensor gi = ref->backward(x, c.target).clone();
      Tensor gig;
      REQUIRE(error_of([&] { gig = twin->backward(xg, tg).clone(); }) == "(no error)");
      CHECK(gig.is_cuda());
      REQUIRE(gig.sizes() == gi.sizes());
      if (gi.numel() > 0) expect_same_nonfinite("gradInput", gig, gi, 1e-9);
    }
  }
}
