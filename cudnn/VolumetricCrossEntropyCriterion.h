// VolumetricCrossEntropyCriterion.h: cudnn.VolumetricCrossEntropyCriterion, nn's on CUDA
// tensors: cuDNN's channel-mode log-softmax on [N x C x T x H x W] scores, then the NLL of every
// voxel's target [N x T x H x W] (see ClassCriterionTwin.h).
#pragma once

#include "cudnn/ClassCriterionTwin.h"
#include "nn/VolumetricCrossEntropyCriterion.h"

namespace cudnn {

class VolumetricCrossEntropyCriterion : public ClassCriterionTwin<nn::VolumetricCrossEntropyCriterion, 3, ClassInput::Scores> {
 public:
  using ClassCriterionTwin::ClassCriterionTwin;
};

}  // namespace cudnn
