// SpatialCrossEntropyCriterion.h: cudnn.SpatialCrossEntropyCriterion, nn's on CUDA tensors:
// cuDNN's channel-mode log-softmax on [N x C x H x W] scores, then the NLL of every pixel's
// target [N x H x W] (see ClassCriterionTwin.h).
#pragma once

#include "cudnn/ClassCriterionTwin.h"
#include "nn/SpatialCrossEntropyCriterion.h"

namespace cudnn {

class SpatialCrossEntropyCriterion : public ClassCriterionTwin<nn::SpatialCrossEntropyCriterion, 2, ClassInput::Scores> {
 public:
  using ClassCriterionTwin::ClassCriterionTwin;
};

}  // namespace cudnn
