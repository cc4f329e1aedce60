// test_CriterionFamily.cpp: the gradients of the nn criteria as one table: each row of
// tests/support/CriterionTable.h (the table the bad-input matrices and the cudnn twins' checks
// walk) on its input shapes, with sizeAverage on and off, and for the class criteria with class
// weights, with ignored targets (-100 among them) and with an ignoreIndex naming a class, against
// central differences in float64. The types' own cases (values by hand, states, printing,
// errors, NaN and Inf) stay in their suites.
#include <doctest/doctest.h>

#include "tests/support/CriterionTable.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

namespace {
// Central differences take two forwards per input element: the table's large shapes (kernels
// spread over many threads on the GPU) add nothing to the gradient check but time.
constexpr int64_t kMaxGradCheckElements = 256;
}  // namespace

TEST_CASE("criterion gradients (sizeAverage; weights, ignored targets and ignoreIndex; batch, single, odd sizes)") {
  for (const CriterionSpec& s : criterion_table()) {
    Generator gen(s.seed);
    INFO(s.type, ", seed ", s.seed);
    int checked = 0;
    for (const Shape& shape : s.shapes) {
      if (shape_numel(shape) > kMaxGradCheckElements) continue;
      const int64_t classes = shape.size() == 1 ? shape[0] : shape[1];
      for (bool avg : {true, false}) {
        // none; weighted; weighted with some targets -100; weighted, ignoreIndex = class 0
        for (int variant = 0; variant < (s.classes ? 4 : 1); ++variant) {
          INFO("input ", shape_str(shape), avg ? " sizeAverage" : " sum", " variant ", variant);
          const Tensor w = variant > 0 ? uniform({classes}, 0.1, 2, gen, DType::Float64) : Tensor();
          nn::CriterionPtr c = s.makeWith(w, avg, variant == 3 ? 0 : -100);
          const Tensor x = uniform(shape, s.lo, s.hi, gen, DType::Float64);
          const Tensor t = s.classes ? class_targets(gen, class_target_shape(shape), classes, variant == 2 ? 3 : 0)
                                     : family_target(s, x, gen);
          expect_criterion_gradient_ok(*c, x, t);
          ++checked;
        }
      }
    }
    CHECK(checked >= 4);  // every row checks some shapes
  }
}
