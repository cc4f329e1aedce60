// HingeEmbeddingCriterion.h: cudnn.HingeEmbeddingCriterion, nn::HingeEmbeddingCriterion on CUDA tensors: the same
// per-element terms (nn/kernels/ElementwiseLoss.h) in one kernel, the loss summed in float64 (see
// cudnn/ElementwiseCriterionBase.h).
#pragma once

#include "cudnn/ElementwiseCriterionBase.h"
#include "nn/HingeEmbeddingCriterion.h"

namespace cudnn {
using HingeEmbeddingCriterion = ElementwiseCriterionBase<nn::HingeEmbeddingCriterion>;
}  // namespace cudnn
