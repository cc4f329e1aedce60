// CriterionTable.h: the criteria as one table, shared by both backends: one row per criterion
// type (how to build it, an input it takes, a valid target for an input shape, a rank it refuses)
// and what the family checks walk:
// - per row, the bad inputs (criterion_cases): a wrong rank, a target of another batch size, an
//   integer input, class targets out of range or not integers, NaN and +-Inf, an empty batch, a
//   non-contiguous input. Each case says what nn does: an error naming the criterion and `names`,
//   or a loss. tests/nn/test_CriterionBadInput.cpp checks nn against it;
//   tests/cudnn/test_CriterionBadInput.cpp checks that the cudnn twins do what nn does.
// - per row, the shapes the criterion is checked on with and without sizeAverage, class weights
//   and ignored targets: its gradients on the CPU (tests/nn/test_CriterionFamily.cpp), its twin
//   against it in every dtype, on NaN and +-Inf and through convert
//   (tests/cudnn/test_CriterionFamily.cpp).
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/AbsCriterion.h"
#include "nn/BCECriterion.h"
#include "nn/BCEWithLogitsCriterion.h"
#include "nn/ClassNLLCriterion.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/DistKLDivCriterion.h"
#include "nn/HingeEmbeddingCriterion.h"
#include "nn/MSECriterion.h"
#include "nn/MultiLabelSoftMarginCriterion.h"
#include "nn/SmoothL1Criterion.h"
#include "nn/SpatialCrossEntropyCriterion.h"
#include "nn/VolumetricCrossEntropyCriterion.h"
#include "tensor/Generator.h"

namespace testing {

struct CriterionSpec {
  std::string type;  // without "nn."
  std::function<nn::CriterionPtr()> make;
  tensor::Shape input;
  std::function<tensor::Tensor(const tensor::Shape& input)> target;  // a valid target for an input of that shape
  tensor::Shape wrongRank;                                           // an input rank it refuses ({}: none)
  bool classes = true;  // the target holds class indices (dimension 1 of the input, 0 for one sample)
  // The criterion with class weights (undefined: none), sizeAverage and ignoreIndex (the class
  // criteria's constructor; MSE takes sizeAverage only).
  std::function<nn::CriterionPtr(const tensor::Tensor& weights, bool sizeAverage, int64_t ignoreIndex)> makeWith;
  std::vector<tensor::Shape> shapes;           // the inputs of the family checks
  double lo = -3, hi = 3;                      // the range of their values
  uint64_t seed = 0;                           // of their values, targets and weights
  std::vector<tensor::Shape> nonfiniteShapes;  // the inputs given NaN and +-Inf (class criteria; MSE: its own)
  double targetLo = -1, targetHi = 1;          // the range of the non-class criteria's targets
  // Non-class rows: the family checks' target for their input x (drawn first), from their
  // generator (family_target); unset: uniform in [targetLo, targetHi]. Set where the gradient
  // jumps, see Note [Family targets clear of the jumps].
  std::function<tensor::Tensor(const tensor::Tensor& x, tensor::Generator& gen)> familyTarget = nullptr;
};

// The family checks' target for the input x of a non-class row.
inline tensor::Tensor family_target(const CriterionSpec& s, const tensor::Tensor& x, tensor::Generator& gen) {
  if (s.familyTarget) return s.familyTarget(x, gen);
  return tensor::uniform(x.sizes(), s.targetLo, s.targetHi, gen, tensor::DType::Float64);
}

// Note [Family targets clear of the jumps]
// The family checks compare each twin in float16 and bfloat16 with nn in float64, nn on the
// values as drawn and the twin on them rounded to its dtype (testkit/TwinCheck.h). Where a
// criterion's gradient jumps, that rounding can carry an element across the jump and change its
// gradient by the jump's full size, far beyond any tolerance:
// - Abs, sign(x - t) at x = t: bfloat16 rounds an x and a t closer than its spacing to the same
//   value (sign 0) or past each other. Its row moves each target at least 1/32 from its input;
//   rounding to bfloat16 (relative error at most 2^-9) moves x - t by under 2^-8 for
//   |x|, |t| <= 1 + 1/32.
// - HingeEmbedding, the tests y == 1 and y == -1: a target within 2^-9 of +-1 rounds to +-1 in
//   bfloat16 and loses a term. Its row draws targets exact in every dtype: +-1 (Torch's targets)
//   and, one in five, 0.5 (PyTorch's formula takes both terms); its inputs, at most 0.9, keep
//   margin - x >= 0.1 clear of the hinge. (Uniform targets in (-1, 1) took both terms
//   everywhere: a zero gradient, -1 + 1, checked nothing.)
// The other elementwise criteria's gradients are continuous in the input and target.
inline tensor::Tensor targets_clear_of_input(const tensor::Tensor& x, tensor::Generator& gen, double lo, double hi) {
  constexpr double kGap = 1.0 / 32;
  tensor::Tensor t = tensor::uniform(x.sizes(), lo, hi, gen, tensor::DType::Float64).contiguous();
  const tensor::Tensor xc = x.to(tensor::DType::Float64).contiguous();
  const double* xp = xc.data<double>();
  double* tp = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double d = xp[i] - tp[i];
    if (std::abs(d) < kGap) tp[i] = xp[i] + (d >= 0 ? -kGap : kGap);
  }
  return t;
}
inline tensor::Tensor hinge_targets(const tensor::Tensor& x, tensor::Generator& gen) {
  tensor::Tensor t = tensor::uniform(x.sizes(), 0, 1, gen, tensor::DType::Float64).contiguous();
  double* tp = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) tp[i] = tp[i] < 0.4 ? -1.0 : tp[i] < 0.8 ? 1.0 : 0.5;
  return t;
}

// `s` with `familyTarget` set.
inline CriterionSpec with_family_target(CriterionSpec s,
                                        std::function<tensor::Tensor(const tensor::Tensor&, tensor::Generator&)> f) {
  s.familyTarget = std::move(f);
  return s;
}

// A non-class criterion's target of that shape, values in [lo, hi] (the same every time).
inline tensor::Tensor value_target(const tensor::Shape& s, double lo, double hi) {
  tensor::Generator gen(4);
  return tensor::uniform(s, lo, hi, gen, tensor::DType::Float64);
}

// A row of the elementwise criteria (nn/ElementwiseCriterionBase.h): C(sizeAverage) through `make`,
// inputs in [lo, hi], targets in [tlo, thi].
inline CriterionSpec elementwise_row(std::string type, std::function<nn::CriterionPtr(bool sizeAverage)> make,
                                     double lo, double hi, double tlo, double thi, uint64_t seed) {
  CriterionSpec s;
  s.type = std::move(type);
  s.make = [make] { return make(true); };
  s.input = {3, 4};
  s.target = [tlo, thi](const tensor::Shape& shape) { return value_target(shape, tlo, thi); };
  s.classes = false;
  s.makeWith = [make](const tensor::Tensor&, bool sizeAverage, int64_t) { return make(sizeAverage); };
  s.shapes = {{4, 5}, {7}, {2, 3, 4}, {1, 1}, {33, 17}};
  s.lo = lo;
  s.hi = hi;
  s.seed = seed;
  s.targetLo = tlo;
  s.targetHi = thi;
  return s;
}

// makeWith of a class criterion C: C(weights, sizeAverage, ignoreIndex).
template <class C>
nn::CriterionPtr make_class_criterion(const tensor::Tensor& weights, bool sizeAverage, int64_t ignoreIndex) {
  return std::make_shared<C>(weights, sizeAverage, ignoreIndex);
}

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

// Class indices in [0, classes) for every position but the class dimension (dim 1, or 0 for one sample).
inline tensor::Tensor class_target(const tensor::Shape& input) {
  tensor::Shape t = input;
  t.erase(t.begin() + (input.size() == 1 ? 0 : 1));
  const int64_t classes = input[input.size() == 1 ? 0 : 1];
  tensor::Generator gen(3);
  return tensor::uniform(t, 0, static_cast<double>(classes), gen, tensor::DType::Float64)
      .floor()
      .clamp(0, static_cast<double>(classes - 1))
      .to(tensor::DType::Int64);
}

// A float64 input of that shape (values in [-1, 1], the same every time).
inline tensor::Tensor criterion_input(const tensor::Shape& s) {
  tensor::Generator gen(5);
  return tensor::uniform(s, -1, 1, gen, tensor::DType::Float64);
}

inline const std::vector<CriterionSpec>& criterion_table() {
  static const std::vector<CriterionSpec> table = {
      {.type = "ClassNLLCriterion",
       .make = [] { return nn::CriterionPtr(std::make_shared<nn::ClassNLLCriterion>()); },
       .input = {4, 5},
       .target = class_target,
       .wrongRank = {2, 4, 5},
       .makeWith = make_class_criterion<nn::ClassNLLCriterion>,
       .shapes = {{7, 5}, {5}, {1, 3}},
       .lo = -3,
       .hi = 0,  // log-probabilities or not, the NLL is linear in its input
       .seed = 3801,
       .nonfiniteShapes = {{7, 5}, {5}, {4, 3}}},
      {.type = "CrossEntropyCriterion",
       .make = [] { return nn::CriterionPtr(std::make_shared<nn::CrossEntropyCriterion>()); },
       .input = {4, 5},
       .target = class_target,
       .wrongRank = {2, 4, 5},
       .makeWith = make_class_criterion<nn::CrossEntropyCriterion>,
       .shapes = {{7, 5}, {5}, {1, 3}, {300, 11}},
       .seed = 3901,
       .nonfiniteShapes = {{7, 5}, {5}, {4, 3}}},
      {.type = "MSECriterion",
       .make = [] { return nn::CriterionPtr(std::make_shared<nn::MSECriterion>()); },
       .input = {3, 4},
       .target =
           [](const tensor::Shape& s) {
             tensor::Generator gen(4);
             return tensor::uniform(s, -1, 1, gen, tensor::DType::Float64);
           },
       .wrongRank = {},
       .classes = false,
       .makeWith = [](const tensor::Tensor&, bool sizeAverage,
                      int64_t) { return nn::CriterionPtr(std::make_shared<nn::MSECriterion>(sizeAverage)); },
       .shapes = {{4, 5}, {7}, {2, 3, 4}, {1, 1}, {33, 17}},
       .lo = -1,
       .hi = 1,
       .seed = 4201,
       .nonfiniteShapes = {}},
      {.type = "SpatialCrossEntropyCriterion",
       .make = [] { return nn::CriterionPtr(std::make_shared<nn::SpatialCrossEntropyCriterion>()); },
       .input = {2, 3, 4, 4},
       .target = class_target,
       .wrongRank = {2, 3, 4},
       .makeWith = make_class_criterion<nn::SpatialCrossEntropyCriterion>,
       .shapes = {{2, 3, 5, 4}, {1, 4, 7, 3}, {3, 2, 1, 1}, {2, 5, 16, 16}},
       .seed = 4001,
       .nonfiniteShapes = {{2, 4, 3, 5}, {1, 3, 2, 2}}},
      {.type = "VolumetricCrossEntropyCriterion",
       .make = [] { return nn::CriterionPtr(std::make_shared<nn::VolumetricCrossEntropyCriterion>()); },
       .input = {2, 3, 2, 3, 3},
       .target = class_target,
       .wrongRank = {2, 3, 4, 4},
       .makeWith = make_class_criterion<nn::VolumetricCrossEntropyCriterion>,
       .shapes = {{2, 3, 2, 3, 4}, {1, 4, 3, 1, 5}, {2, 2, 1, 1, 1}},
       .seed = 4101,
       .nonfiniteShapes = {{2, 3, 2, 3, 4}}},
      with_family_target(  // Note [Family targets clear of the jumps]
          elementwise_row(
              "AbsCriterion", [](bool avg) { return nn::CriterionPtr(std::make_shared<nn::AbsCriterion>(avg)); }, -1, 1,
              -1, 1, 4301),
          [](const tensor::Tensor& x, tensor::Generator& gen) { return targets_clear_of_input(x, gen, -1, 1); }),
      elementwise_row(
          "BCECriterion",
          [](bool avg) { return nn::CriterionPtr(std::make_shared<nn::BCECriterion>(tensor::Tensor(), avg)); }, 0.05,
          0.95, 0, 1, 4302),
      elementwise_row(
          "BCEWithLogitsCriterion",
          [](bool avg) {
            return nn::CriterionPtr(std::make_shared<nn::BCEWithLogitsCriterion>(tensor::Tensor(), avg));
          },
          -3, 3, 0, 1, 4303),
      elementwise_row(
          "DistKLDivCriterion",
          [](bool avg) { return nn::CriterionPtr(std::make_shared<nn::DistKLDivCriterion>(avg)); }, -3, 0, 0.01, 1,
          4304),
      with_family_target(  // Note [Family targets clear of the jumps]
          elementwise_row(
              "HingeEmbeddingCriterion",
              [](bool avg) { return nn::CriterionPtr(std::make_shared<nn::HingeEmbeddingCriterion>(1.0, avg)); }, -1,
              0.9, -1, 1, 4305),
          hinge_targets),
      elementwise_row(
          "MultiLabelSoftMarginCriterion",
          [](bool avg) {
            return nn::CriterionPtr(std::make_shared<nn::MultiLabelSoftMarginCriterion>(tensor::Tensor(), avg));
          },
          -3, 3, 0, 1, 4306),
      elementwise_row(
          "SmoothL1Criterion",
          [](bool avg) { return nn::CriterionPtr(std::make_shared<nn::SmoothL1Criterion>(avg, 0.5)); }, -1, 1, -1, 1,
          4307),
  };
  return table;
}

struct CriterionCase {
  std::string name;
  tensor::Tensor input, target;  // on the CPU; the input float64 (int64 for "integer input")
  bool noncontiguous = false;    // give the input as noncontiguous_copy (NonContiguous.h) on its device
  bool error = false;            // nn refuses it, in a message naming the criterion and...
  std::string names;             // ...this (a shape, a dtype, a value)
};

// criterion_input, for a non-class row mapped onto its value range [s.lo, s.hi] (a BCE input
// stays a probability).
inline tensor::Tensor spec_input(const CriterionSpec& s, const tensor::Shape& shape) {
  const tensor::Tensor x = criterion_input(shape);
  return s.classes ? x : x.add(1).mul((s.hi - s.lo) / 2).add(s.lo);
}

inline std::vector<CriterionCase> criterion_cases(const CriterionSpec& s) {
  using tensor::Tensor;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor x = spec_input(s, s.input), t = s.target(s.input);
  std::vector<CriterionCase> cases;
  auto loss = [&](std::string name, Tensor input, Tensor target, bool noncontiguous = false) {
    cases.push_back({std::move(name), std::move(input), std::move(target), noncontiguous, false, ""});
  };
  if (!s.wrongRank.empty()) {
    cases.push_back({"wrong rank", criterion_input(s.wrongRank), t, false, true, tensor::shape_str(s.wrongRank)});
  }
  tensor::Shape bigger = s.input;
  bigger[0] += 1;
  const Tensor tb = s.target(bigger);
  cases.push_back({"target of another batch size", x, tb, false, true, tensor::shape_str(tb.sizes())});
  cases.push_back({"integer input", tensor::zeros(s.input, tensor::DType::Int64), t, false, true, "int64"});
  if (s.classes) {
    const int64_t classes = s.input[1];
    for (int64_t bad : {classes, int64_t{-1}}) {
      Tensor tc = t.clone();
      tc.view({-1}).set({1}, static_cast<double>(bad));
      cases.push_back(
          {"target class " + std::to_string(bad) + " out of range", x, tc, false, true, "got " + std::to_string(bad)});
    }
    Tensor tf = t.to(tensor::DType::Float64);
    tf.view({-1}).set({0}, 0.5);
    cases.push_back({"target class 0.5 (not an integer)", x, tf, false, true, "0.5"});
  } else {
    Tensor tn = t.clone();
    tn.view({-1}).set({2}, nan);
    loss("NaN in the target", x, tn);
  }
  loss("NaN everywhere", tensor::full(s.input, nan, tensor::DType::Float64), t);
  loss("+Inf everywhere", tensor::full(s.input, inf, tensor::DType::Float64), t);
  Tensor mixed = x.clone();
  mixed.view({-1}).set({0}, nan);
  mixed.view({-1}).set({3}, inf);
  mixed.view({-1}).set({5}, -inf);
  loss("NaN, +Inf and -Inf at some positions", mixed, t);
  const tensor::Shape empty = [&] {
    tensor::Shape e = s.input;
    e[0] = 0;
    return e;
  }();
  loss("empty batch", tensor::zeros(empty, tensor::DType::Float64), s.target(empty));
  loss("non-contiguous input", x, t, true);
  return cases;
}

}  // namespace testing
