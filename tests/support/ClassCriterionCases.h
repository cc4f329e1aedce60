// ClassCriterionCases.h: the comparisons every cudnn criterion runs against its nn criterion,
// walking a row of tests/support/CriterionTable.h (tests/cudnn/test_CriterionFamily.cpp): every
// dtype, sizeAverage on and off, and for the class criteria (ClassNLL, CrossEntropy,
// Spatial/VolumetricCrossEntropy) with and without class weights, with targets ignored (the
// default ignoreIndex -100, and an ignoreIndex naming a real class), for each of the row's input
// shapes ([C], [N x C], [N x C x H x W], ...; the target drops dimension 1); NaN and +-Inf.
// The twin is nn::convert of the same criterion.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "convert/Convert.h"
#include "tests/support/CriterionTable.h"
#include "tests/support/TwinCheck.h"

namespace testing {

// The twin of the criterion s.makeWith builds from these arguments.
inline nn::CriterionPtr twin_of(const CriterionSpec& s, const tensor::Tensor& weights, bool sizeAverage,
                                int64_t ignoreIndex) {
  return nn::convert(s.makeWith(weights, sizeAverage, ignoreIndex), cudnn::backend);
}

// The twin against nn on each of s.shapes, with values in [s.lo, s.hi] from s.seed.
inline void expect_criterion_twin_matches(const CriterionSpec& s) {
  using tensor::DType;
  tensor::Generator gen(s.seed);
  INFO(s.type, ", seed ", s.seed);
  const std::vector<bool> weightings = s.classes ? std::vector<bool>{false, true} : std::vector<bool>{false};
  const std::vector<int> ignorings = s.classes ? std::vector<int>{0, 1, 2} : std::vector<int>{0};
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (const tensor::Shape& shape : s.shapes) {
      const int64_t classes = shape.size() == 1 ? shape[0] : shape[1];
      for (bool avg : {true, false}) {
        for (bool weighted : weightings) {
          for (int ignoring : ignorings) {  // none; some targets -100; ignoreIndex = class 1
            INFO(tensor::name(dt), " input ", tensor::shape_str(shape), avg ? " sizeAverage" : " sum",
                 weighted ? " weighted" : "",
                 ignoring == 1   ? " some ignored"
                 : ignoring == 2 ? " ignoreIndex 1"
                                 : "");
            const tensor::Tensor w =
                weighted ? tensor::uniform({classes}, 0.1, 2, gen, DType::Float64) : tensor::Tensor();
            const int64_t ignoreIndex = ignoring == 2 ? 1 : -100;
            nn::CriterionPtr ref = s.makeWith(w, avg, ignoreIndex), twin = twin_of(s, w, avg, ignoreIndex);
            const tensor::Tensor x = tensor::uniform(shape, s.lo, s.hi, gen, DType::Float64);
            const tensor::Tensor t = s.classes
                                         ? class_targets(gen, class_target_shape(shape), classes, ignoring == 1 ? 3 : 0)
                                         : family_target(s, x, gen);
            expect_twin_criterion_matches(*ref, *twin, x, t, dt, TwinTolerance::for_dtype(dt));
          }
        }
      }
    }
  }
}

// NaN, +Inf and -Inf in the input (Note [NaN and Inf] in nn/kernels/Activation.h) of each of a
// class criterion's s.nonfiniteShapes, float32, sizeAverage on and off, weighted and not: the
// loss and gradient are nn's, non-finite or not. Besides the default positions, the three values
// are put at the targets of samples 0 and 1 and off target in sample 2, so a criterion reading
// only the target entry sees both kinds.
inline void expect_class_criterion_nonfinite(const CriterionSpec& s, uint64_t seed = 3901) {
  using tensor::DType;
  tensor::Generator gen(seed);
  for (const tensor::Shape& shape : s.nonfiniteShapes) {
    const int64_t classes = shape.size() == 1 ? shape[0] : shape[1];
    const tensor::Tensor t = class_targets(gen, class_target_shape(shape), classes);
    // flat input offsets of (sample i, class c) for [N x C] inputs; others use the defaults
    std::vector<std::vector<int64_t>> placements = {{}};
    if (shape.size() == 2 && shape[0] >= 3 && classes >= 2) {
      const tensor::Tensor tc = t.contiguous();
      const int64_t* tp = tc.data<int64_t>();
      placements.push_back({tp[0], classes + tp[1], 2 * classes + (tp[2] + 1) % classes});
    }
    for (const auto& at : placements) {
      for (bool avg : {true, false}) {
        for (bool weighted : {false, true}) {
          INFO(s.type, " input ", tensor::shape_str(shape), avg ? " sizeAverage" : " sum", weighted ? " weighted" : "",
               at.empty() ? " default positions" : " at targets and off target");
          const tensor::Tensor w =
              weighted ? tensor::uniform({classes}, 0.1, 2, gen, DType::Float64) : tensor::Tensor();
          nn::CriterionPtr ref = s.makeWith(w, avg, -100), twin = twin_of(s, w, avg, -100);
          expect_twin_criterion_nonfinite_matches(*ref, *twin, tensor::uniform(shape, -3, 0, gen, DType::Float64), t,
                                                  at);
        }
      }
    }
  }
}

}  // namespace testing
