// test_CriterionBadInput.cpp: the bad-input matrix for the criteria (the modules' is
// test_BadInput.cpp), over the table of tests/support/CriterionTable.h: a wrong rank, a target of
// the wrong batch size, an integer input and class targets out of range are errors naming the
// criterion and the offending shape, dtype or value; an input that is NaN everywhere gives a NaN
// loss; NaN/Inf elsewhere and an empty batch give a loss and a gradInput of the input's shape; a
// non-contiguous input gives what its contiguous copy gives. The GPU half
// (tests/cudnn/test_CriterionBadInput.cpp) runs the same cases through the cudnn twins.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "tests/support/CriterionTable.h"
#include "tests/support/ErrorText.h"
#include "tests/support/NonContiguous.h"

using namespace tensor;
using namespace testing;

TEST_CASE("bad-input matrix (criteria): every case of the shared table gives nn's documented error or a loss") {
  for (const CriterionSpec& s : criterion_table()) {
    for (const CriterionCase& c : criterion_cases(s)) {
      INFO(s.type, ": ", c.name);
      nn::CriterionPtr m = s.make();
      const Tensor x = c.noncontiguous ? noncontiguous_copy(c.input) : c.input;
      double loss = 0;
      const std::string e = error_of([&] { loss = m->forward(x, c.target); });
      INFO(e);
      if (c.error) {
        CHECK(has(e, "nn." + s.type + "::"));
        CHECK(has(e, c.names));
        continue;
      }
      REQUIRE(e == "(no error)");
      if (c.name == "NaN everywhere") CHECK(std::isnan(loss));
      if (c.name == "+Inf everywhere") CHECK_FALSE(std::isfinite(loss));
      Shape grad;
      CHECK(error_of([&] { grad = m->backward(x, c.target).sizes(); }) == "(no error)");
      CHECK(grad == c.input.sizes());
    }
  }
}

TEST_CASE("bad-input matrix (criteria): an input NaN everywhere gives a NaN loss, in float32 and float64") {
  for (const CriterionSpec& s : criterion_table()) {
    for (DType dt : {DType::Float64, DType::Float32}) {
      INFO(s.type, " in ", name(dt));
      nn::CriterionPtr c = s.make();
      const Tensor target = !s.classes ? s.target(s.input).to(dt) : s.target(s.input);
      const double loss = c->forward(full(s.input, std::numeric_limits<double>::quiet_NaN(), dt), target);
      CHECK(std::isnan(loss));
    }
  }
}

TEST_CASE("bad-input matrix (criteria): a non-contiguous input gives its contiguous copy's loss and gradInput") {
  for (const CriterionSpec& s : criterion_table()) {
    INFO(s.type);
    // the same values seen through a transposed copy: the first two dimensions swapped twice
    const Tensor x = spec_input(s, s.input);
    const Tensor strided = x.transpose(0, 1).contiguous().transpose(0, 1);
    REQUIRE_FALSE(strided.is_contiguous());
    const Tensor target = s.target(s.input);
    nn::CriterionPtr a = s.make(), b = s.make();
    CHECK(a->forward(x, target) == b->forward(strided, target));
    const Tensor ga = a->backward(x, target).clone(), gb = b->backward(strided, target).clone();
    CHECK(ga.sizes() == gb.sizes());
    CHECK(ga.sub(gb).abs().max().item() == 0);
  }
}
