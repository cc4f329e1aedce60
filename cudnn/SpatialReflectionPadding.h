// SpatialReflectionPadding.h: cudnn.SpatialReflectionPadding, nn::SpatialReflectionPadding on CUDA tensors
// (SpatialPaddingBase.h).
#pragma once

#include "cudnn/SpatialPaddingBase.h"
#include "nn/SpatialReflectionPadding.h"

namespace cudnn {
using SpatialReflectionPadding = SpatialPaddingBase<nn::SpatialReflectionPadding>;
}  // namespace cudnn
