// ClassNLLCriterion.h: the negative log-likelihood of target classes, for an input of
// log-probabilities [classes] or [batch x classes] (e.g. a LogSoftMax output):
// loss = sum_i -weights[t_i] * input[i][t_i], divided by sum_i weights[t_i] under sizeAverage
// (Torch's THNN; plain batch mean without weights). Targets: a one-element tensor or
// [batch], of any dtype holding integers; CLASSES ARE 0-BASED here (Torch's are 1-based).
// Targets equal to ignoreIndex count for nothing. Twin: cudnn::ClassNLLCriterion.
#pragma once

#include "nn/Criterion.h"

namespace nn {

class ClassNLLCriterion : public Criterion {
 public:
  explicit ClassNLLCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100);

  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;
  static constexpr std::string_view kTypeName = "nn.ClassNLLCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  Tensor weights;  // [classes], or undefined for all ones
  bool sizeAverage;
  int64_t ignoreIndex;

 protected:
  void visitState(StateVisitor& v) override { v.buffer("weights", weights); }
};

}  // namespace nn
