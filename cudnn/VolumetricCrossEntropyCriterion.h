// VolumetricCrossEntropyCriterion.h: cudnn.VolumetricCrossEntropyCriterion, nn's on CUDA
// tensors: cuDNN's channel-mode log-softmax on [N x C x T x H x W] scores, then the NLL of every
// voxel's target [N x T x H x W] (see ClassCriterionBase.h).
#pragma once

#include "cudnn/ClassCriterionBase.h"
#include "nn/VolumetricCrossEntropyCriterion.h"

namespace cudnn {
using VolumetricCrossEntropyCriterion = ClassCriterionBase<nn::VolumetricCrossEntropyCriterion>;
}  // namespace cudnn
