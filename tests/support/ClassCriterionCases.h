// ClassCriterionCases.h: the configurations every cudnn classification criterion (ClassNLL,
// CrossEntropy, Spatial/VolumetricCrossEntropy) is compared with its nn criterion in: every
// dtype, sizeAverage on and off, with and without class weights, with targets ignored
// (the default ignoreIndex -100, and an ignoreIndex naming a real class), for each input
// shape given ([C], [N x C], [N x C x H x W], ...; the target drops dimension 1).
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "tests/support/TwinCheck.h"

namespace testing {

// Random 0-based classes, every `ignoreEvery`-th one (from the second) replaced by `ignore`.
inline tensor::Tensor class_targets(tensor::Generator& gen, const tensor::Shape& shape, int64_t classes,
                                    int64_t ignoreEvery = 0, int64_t ignore = -100) {
  const int64_t n = tensor::shape_numel(shape);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = ignoreEvery && i % ignoreEvery == 1 ? ignore : gen.randint(classes);
  return tensor::from_vector<int64_t>(v, shape);
}

// The target shape nn expects for an input shape: [1] for [C], the input without dimension 1 otherwise.
inline tensor::Shape class_target_shape(const tensor::Shape& input) {
  if (input.size() == 1) return {1};
  tensor::Shape t{input[0]};
  t.insert(t.end(), input.begin() + 2, input.end());
  return t;
}

template <class NnCriterion, class TwinCriterion>
void expect_class_criterion_matches(const std::vector<tensor::Shape>& inputs, uint64_t seed, double lo = -3,
                                    double hi = 3) {
  using tensor::DType;
  tensor::Generator gen(seed);
  INFO("seed ", seed);
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (const tensor::Shape& s : inputs) {
      const int64_t classes = s.size() == 1 ? s[0] : s[1];
      for (bool avg : {true, false}) {
        for (bool weighted : {false, true}) {
          for (int ignoring : {0, 1, 2}) {  // none; some targets -100; ignoreIndex = class 1
            INFO(tensor::name(dt), " input ", tensor::shape_str(s), avg ? " sizeAverage" : " sum",
                 weighted ? " weighted" : "", ignoring == 1 ? " some ignored" : ignoring == 2 ? " ignoreIndex 1" : "");
            const tensor::Tensor w = weighted ? tensor::uniform({classes}, 0.1, 2, gen, DType::Float64) : tensor::Tensor();
            const int64_t ignoreIndex = ignoring == 2 ? 1 : -100;
            NnCriterion ref(w, avg, ignoreIndex);
            TwinCriterion twin(w, avg, ignoreIndex);
            const tensor::Tensor x = tensor::uniform(s, lo, hi, gen, DType::Float64);
            const tensor::Tensor t = class_targets(gen, class_target_shape(s), classes, ignoring == 1 ? 3 : 0);
            expect_twin_criterion_matches(ref, twin, x, t, dt, TwinTolerance::for_dtype(dt));
          }
        }
      }
    }
  }
}

// NaN, +Inf and -Inf in the input (Note [NaN and Inf] in nn/kernels/Activation.h), float32,
// sizeAverage on and off, weighted and not: the loss and gradient are nn's, non-finite or not.
// Besides the default positions, the three values are put at the targets of samples 0 and 1
// and off target in sample 2, so a criterion reading only the target entry sees both kinds.
template <class NnCriterion, class TwinCriterion>
void expect_class_criterion_nonfinite(const std::vector<tensor::Shape>& inputs, uint64_t seed) {
  using tensor::DType;
  tensor::Generator gen(seed);
  for (const tensor::Shape& s : inputs) {
    const int64_t classes = s.size() == 1 ? s[0] : s[1];
    const tensor::Tensor t = class_targets(gen, class_target_shape(s), classes);
    // flat input offsets of (sample i, class c) for [N x C] inputs; others use the defaults
    std::vector<std::vector<int64_t>> placements = {{}};
    if (s.size() == 2 && s[0] >= 3 && classes >= 2) {
      const tensor::Tensor tc = t.contiguous();
      const int64_t* tp = tc.data<int64_t>();
      placements.push_back({tp[0], classes + tp[1], 2 * classes + (tp[2] + 1) % classes});
    }
    for (const auto& at : placements) {
      for (bool avg : {true, false}) {
        for (bool weighted : {false, true}) {
          INFO("input ", tensor::shape_str(s), avg ? " sizeAverage" : " sum", weighted ? " weighted" : "",
               at.empty() ? " default positions" : " at targets and off target");
          const tensor::Tensor w =
              weighted ? tensor::uniform({classes}, 0.1, 2, gen, DType::Float64) : tensor::Tensor();
          NnCriterion ref(w, avg, -100);
          TwinCriterion twin(w, avg, -100);
          expect_twin_criterion_nonfinite_matches(ref, twin, tensor::uniform(s, -3, 0, gen, DType::Float64), t, at);
        }
      }
    }
  }
}

}  // namespace testing
