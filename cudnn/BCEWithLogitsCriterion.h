// BCEWithLogitsCriterion.h: cudnn.BCEWithLogitsCriterion, nn::BCEWithLogitsCriterion on CUDA tensors: the same
// per-element terms (nn/kernels/ElementwiseLoss.h) in one kernel, the loss summed in float64 (see
// cudnn/ElementwiseCriterionBase.h).
#pragma once

#include "cudnn/ElementwiseCriterionBase.h"
#include "nn/BCEWithLogitsCriterion.h"

namespace cudnn {
using BCEWithLogitsCriterion = ElementwiseCriterionBase<nn::BCEWithLogitsCriterion>;
}  // namespace cudnn
