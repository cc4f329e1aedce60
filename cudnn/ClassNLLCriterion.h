// ClassNLLCriterion.h: cudnn.ClassNLLCriterion, nn::ClassNLLCriterion on CUDA tensors: the
// weighted negative log-likelihood of 0-based class targets over log-probabilities [C] or
// [N x C], by cudnn/kernels/ClassNLL.h (see ClassCriterionTwin.h).
#pragma once

#include "cudnn/ClassCriterionTwin.h"
#include "nn/ClassNLLCriterion.h"

namespace cudnn {

class ClassNLLCriterion : public ClassCriterionTwin<nn::ClassNLLCriterion, 0, ClassInput::LogProbabilities> {
 public:
  using ClassCriterionTwin::ClassCriterionTwin;
};

}  // namespace cudnn
