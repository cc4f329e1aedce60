// ClassCriterionCases.h: the configurations every cudnn classification criterion (ClassNLL,
// CrossEntropy, Spatial/VolumetricCrossEntropy) is compared with its nn criterion in: every
// dtype, sizeAverage on and off, with and without class weights, with targets ignored
// (the default ignoreIndex -100, and an ignoreIndex naming a real class), for each input
// shape given ([C], [N x C], [N x C x H x W], ...; the target drops dimension 1).
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "tests/cudnn/TwinCheck.h"

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

}  // namespace testing
