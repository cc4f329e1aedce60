// CriterionTable.h: the bad-input matrix of the criteria, shared by both backends: one row per
// criterion type (how to build it, an input it takes, a valid target for an input shape, a rank it
// refuses) and, per row, the bad inputs (criterion_cases): a wrong rank, a target of another batch
// size, an integer input, class targets out of range or not integers, NaN and +-Inf, an empty
// batch, a non-contiguous input. Each case says what nn does: an error naming the criterion and
// `names`, or a loss. tests/nn/test_CriterionBadInput.cpp checks nn against it;
// tests/cudnn/test_CriterionBadInput.cpp checks that the cudnn twins do what nn does.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/ClassNLLCriterion.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/MSECriterion.h"
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
};

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
      {"ClassNLLCriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::ClassNLLCriterion>()); },
       {4, 5},
       class_target,
       {2, 4, 5}},
      {"CrossEntropyCriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::CrossEntropyCriterion>()); },
       {4, 5},
       class_target,
       {2, 4, 5}},
      {"MSECriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::MSECriterion>()); },
       {3, 4},
       [](const tensor::Shape& s) {
         tensor::Generator gen(4);
         return tensor::uniform(s, -1, 1, gen, tensor::DType::Float64);
       },
       {},
       false},
      {"SpatialCrossEntropyCriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::SpatialCrossEntropyCriterion>()); },
       {2, 3, 4, 4},
       class_target,
       {2, 3, 4}},
      {"VolumetricCrossEntropyCriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::VolumetricCrossEntropyCriterion>()); },
       {2, 3, 2, 3, 3},
       class_target,
       {2, 3, 4, 4}},
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

inline std::vector<CriterionCase> criterion_cases(const CriterionSpec& s) {
  using tensor::Tensor;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor x = criterion_input(s.input), t = s.target(s.input);
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
      cases.push_back({"target class " + std::to_string(bad) + " out of range", x, tc, false, true,
                       "got " + std::to_string(bad)});
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
