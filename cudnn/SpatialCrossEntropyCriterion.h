// SpatialCrossEntropyCriterion.h: cudnn.SpatialCrossEntropyCriterion, nn's on CUDA tensors:
// cuDNN's channel-mode log-softmax on [N x C x H x W] scores, then the NLL of every pixel's
// target [N x H x W] (see ClassCriterionBase.h).
#pragma once

#include "cudnn/ClassCriterionBase.h"
#include "nn/SpatialCrossEntropyCriterion.h"

namespace cudnn {
using SpatialCrossEntropyCriterion = ClassCriterionBase<nn::SpatialCrossEntropyCriterion>;
}  // namespace cudnn
