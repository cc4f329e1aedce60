// DistKLDivCriterion.h: cudnn.DistKLDivCriterion, nn::DistKLDivCriterion on CUDA tensors: the same per-element terms
// (nn/kernels/ElementwiseLoss.h) in one kernel, the loss summed in float64 (see
// cudnn/ElementwiseCriterionBase.h).
#pragma once

#include "cudnn/ElementwiseCriterionBase.h"
#include "nn/DistKLDivCriterion.h"

namespace cudnn {
using DistKLDivCriterion = ElementwiseCriterionBase<nn::DistKLDivCriterion>;
}  // namespace cudnn
