// MultiLabelSoftMarginCriterion.h: cudnn.MultiLabelSoftMarginCriterion, nn::MultiLabelSoftMarginCriterion on CUDA
// tensors: the same per-element terms (nn/kernels/ElementwiseLoss.h) in one kernel, the loss summed in float64 (see
// cudnn/ElementwiseCriterionBase.h).
#pragma once

#include "cudnn/ElementwiseCriterionBase.h"
#include "nn/MultiLabelSoftMarginCriterion.h"

namespace cudnn {
using MultiLabelSoftMarginCriterion = ElementwiseCriterionBase<nn::MultiLabelSoftMarginCriterion>;
}  // namespace cudnn
