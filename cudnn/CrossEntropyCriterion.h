// CrossEntropyCriterion.h: cudnn.CrossEntropyCriterion, nn::CrossEntropyCriterion on CUDA
// tensors: cuDNN's log-softmax (channel mode on [N x C x 1 x 1]) then the NLL of the targets,
// for scores [C] or [N x C] (see ClassCriterionBase.h).
#pragma once

#include "cudnn/ClassCriterionBase.h"
#include "nn/CrossEntropyCriterion.h"

namespace cudnn {
using CrossEntropyCriterion = ClassCriterionBase<nn::CrossEntropyCriterion>;
}  // namespace cudnn
