// CrossEntropyCriterion.h: cudnn.CrossEntropyCriterion, nn::CrossEntropyCriterion on CUDA
// tensors: cuDNN's log-softmax (channel mode on [N x C x 1 x 1]) then the NLL of the targets,
// for scores [C] or [N x C] (see ClassCriterionTwin.h).
#pragma once

#include "cudnn/ClassCriterionTwin.h"
#include "nn/CrossEntropyCriterion.h"

namespace cudnn {

class CrossEntropyCriterion : public ClassCriterionTwin<nn::CrossEntropyCriterion, 0, ClassInput::Scores> {
 public:
  using ClassCriterionTwin::ClassCriterionTwin;
};

}  // namespace cudnn
