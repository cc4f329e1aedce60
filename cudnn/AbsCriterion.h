// AbsCriterion.h: cudnn.AbsCriterion, nn::AbsCriterion on CUDA tensors: the same per-element terms
// (nn/kernels/ElementwiseLoss.h) in one kernel, the loss summed in float64 (see
// cudnn/ElementwiseCriterionBase.h).
#pragma once

#include "cudnn/ElementwiseCriterionBase.h"
#include "nn/AbsCriterion.h"

namespace cudnn {
using AbsCriterion = ElementwiseCriterionBase<nn::AbsCriterion>;
}  // namespace cudnn
