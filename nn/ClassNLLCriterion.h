// ClassNLLCriterion.h: the negative log-likelihood of target classes, for an input of
// log-probabilities [classes] or [batch x classes] (e.g. a LogSoftMax output):
// loss = sum_i -weights[t_i] * input[i][t_i], divided by sum_i weights[t_i] under sizeAverage
// (Torch's THNN; plain batch mean without weights). Targets: a one-element tensor or
// [batch], of any dtype holding integers; CLASSES ARE 0-BASED here (Torch's are 1-based).
// Targets equal to ignoreIndex count for nothing. Twin: cudnn::ClassNLLCriterion.
#pragma once

#include "nn/ClassCriterionBase.h"

namespace nn {

class ClassNLLCriterion : public ClassCriterion<ClassNLLCriterion, ClassInput::LogProbabilities, 0> {
 public:
  using ClassCriterion::ClassCriterion;
  static constexpr std::string_view kTypeName = "nn.ClassNLLCriterion";
};

}  // namespace nn
