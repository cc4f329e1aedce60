// SpatialZeroPadding.h: cudnn.SpatialZeroPadding, nn::SpatialZeroPadding on CUDA tensors (SpatialPaddingBase.h).
#pragma once

#include "cudnn/SpatialPaddingBase.h"
#include "nn/SpatialZeroPadding.h"

namespace cudnn {
using SpatialZeroPadding = SpatialPaddingBase<nn::SpatialZeroPadding>;
}  // namespace cudnn
