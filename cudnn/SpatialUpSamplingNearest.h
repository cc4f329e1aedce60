// SpatialUpSamplingNearest.h: cudnn.SpatialUpSamplingNearest, nn::SpatialUpSamplingNearest on CUDA tensors
// (SpatialUpSamplingBase.h).
#pragma once

#include "cudnn/SpatialUpSamplingBase.h"
#include "nn/SpatialUpSamplingNearest.h"

namespace cudnn {
using SpatialUpSamplingNearest = SpatialUpSamplingBase<nn::SpatialUpSamplingNearest>;
}  // namespace cudnn
