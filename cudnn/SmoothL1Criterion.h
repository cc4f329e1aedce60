// SmoothL1Criterion.h: cudnn.SmoothL1Criterion, nn::SmoothL1Criterion on CUDA tensors: the same per-element terms
// (nn/kernels/ElementwiseLoss.h) in one kernel, the loss summed in float64 (see
// cudnn/ElementwiseCriterionBase.h).
#pragma once

#include "cudnn/ElementwiseCriterionBase.h"
#include "nn/SmoothL1Criterion.h"

namespace cudnn {
using SmoothL1Criterion = ElementwiseCriterionBase<nn::SmoothL1Criterion>;
}  // namespace cudnn
