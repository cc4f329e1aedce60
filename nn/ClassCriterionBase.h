// ClassCriterionBase.h: the shared base of the classification criteria, ClassNLLCriterion
// (input of log-probabilities), CrossEntropyCriterion and its Spatial/Volumetric forms (input
// of class scores, log-softmax over the classes first, in one stable pass): targets of 0-based
// classes (any dtype holding integers) with the input's layout less the class dimension, class
// weights, sizeAverage (divide by the targets' total weight), ignoreIndex (targets that count
// for nothing). A criterion only fixes its input, its number of spatial dims and its name
// (ClassCriterion below). Twins: cudnn::ClassCriterionBase, over the same fields.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "nn/Criterion.h"

namespace nn {

// What a classification criterion's input holds.
enum class ClassInput { LogProbabilities, Scores };

class ClassCriterionBase : public Criterion {
 public:
  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;

  Tensor weights;  // [classes], or undefined for all ones
  bool sizeAverage;
  int64_t ignoreIndex;
  Tensor logProbs;  // of ClassInput::Scores: log_softmax(input) of the last call

  ClassInput classInput() const { return input_; }
  int spatialDims() const { return spatialDims_; }

 protected:
  // spatialDims 0: input [classes] or [batch x classes], target one element or [batch];
  // 2 or 3: input [N x C x spatial...], target [N x spatial...]. name: the type name, for the
  // weights' errors (a constructor cannot call type_name()).
  ClassCriterionBase(std::string_view name, ClassInput input, int spatialDims, Tensor weights, bool sizeAverage,
                     int64_t ignoreIndex);
  void visitState(StateVisitor& v) override { v.buffer("weights", weights); }

 private:
  ClassInput input_;
  int spatialDims_;
};

// What each classification criterion adds: its input and spatial dims, and its type name from
// Self::kTypeName. A criterion is `class ClassNLLCriterion : public
// ClassCriterion<ClassNLLCriterion, ClassInput::LogProbabilities, 0>` with `using
// ClassCriterion::ClassCriterion;` and its kTypeName.
template <class Self, ClassInput Input, int SpatialDims>
class ClassCriterion : public ClassCriterionBase {
 public:
  explicit ClassCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100)
      : ClassCriterionBase(Self::kTypeName, Input, SpatialDims, std::move(weights), sizeAverage, ignoreIndex) {}
  std::string type_name() const override { return std::string(Self::kTypeName); }
};

}  // namespace nn
