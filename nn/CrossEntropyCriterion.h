// CrossEntropyCriterion.h: LogSoftMax followed by ClassNLLCriterion, in one stable pass
// (log-sum-exp): loss = sum_i -weights[t_i] * log_softmax(input[i])[t_i], divided by the
// targets' total weight under sizeAverage. Input of scores [classes] or [batch x classes];
// targets as ClassNLLCriterion: a one-element tensor or [batch] of integers, CLASSES
// 0-BASED; ignoreIndex counts for nothing. Twin: cudnn::CrossEntropyCriterion.
#pragma once

#include "nn/ClassCriterionBase.h"

namespace nn {

class CrossEntropyCriterion : public ClassCriterion<CrossEntropyCriterion, ClassInput::Scores, 0> {
 public:
  using ClassCriterion::ClassCriterion;
  static constexpr std::string_view kTypeName = "nn.CrossEntropyCriterion";
};

}  // namespace nn
