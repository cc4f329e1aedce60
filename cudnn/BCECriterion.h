// BCECriterion.h: cudnn.BCECriterion, nn::BCECriterion on CUDA tensors: the same per-element terms
// (nn/kernels/ElementwiseLoss.h) in one kernel, the loss summed in float64 (see
// cudnn/ElementwiseCriterionBase.h).
#pragma once

#include "cudnn/ElementwiseCriterionBase.h"
#include "nn/BCECriterion.h"

namespace cudnn {
using BCECriterion = ElementwiseCriterionBase<nn::BCECriterion>;
}  // namespace cudnn
