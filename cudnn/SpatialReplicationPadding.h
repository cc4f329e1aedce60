// SpatialReplicationPadding.h: cudnn.SpatialReplicationPadding, nn::SpatialReplicationPadding on CUDA tensors
// (SpatialPaddingBase.h).
#pragma once

#include "cudnn/SpatialPaddingBase.h"
#include "nn/SpatialReplicationPadding.h"

namespace cudnn {
using SpatialReplicationPadding = SpatialPaddingBase<nn::SpatialReplicationPadding>;
}  // namespace cudnn
