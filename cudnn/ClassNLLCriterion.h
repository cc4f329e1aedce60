// ClassNLLCriterion.h: cudnn.ClassNLLCriterion, nn::ClassNLLCriterion on CUDA tensors: the
// weighted negative log-likelihood of 0-based class targets over log-probabilities [C] or
// [N x C], by cudnn/kernels/ClassNLL.h (see ClassCriterionBase.h).
#pragma once

#include "cudnn/ClassCriterionBase.h"
#include "nn/ClassNLLCriterion.h"

namespace cudnn {
using ClassNLLCriterion = ClassCriterionBase<nn::ClassNLLCriterion>;
}  // namespace cudnn
