// CrossEntropyCriterion.h: LogSoftMax followed by ClassNLLCriterion, in one stable pass
// (log-sum-exp): loss = sum_i -weights[t_i] * log_softmax(input[i])[t_i], divided by the
// targets' total weight under sizeAverage. Input of scores [classes] or [batch x classes];
// targets as ClassNLLCriterion: a one-element tensor or [batch] of integers, CLASSES
// 0-BASED; ignoreIndex counts for nothing. Twin: cudnn::CrossEntropyCriterion.
#pragma once

#include "nn/Criterion.h"

namespace nn {

class CrossEntropyCriterion : public Criterion {
 public:
  explicit CrossEntropyCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100);

  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;
  static constexpr std::string_view kTypeName = "nn.CrossEntropyCriterion";
  std::string type_name() const override { return std::string(kTypeName); }

  Tensor weights;  // [classes], or undefined for all ones
  bool sizeAverage;
  int64_t ignoreIndex;
  Tensor logProbs;  // log_softmax(input) of the last call

 protected:
  void visitState(StateVisitor& v) override { v.buffer("weights", weights); }
};

}  // namespace nn
