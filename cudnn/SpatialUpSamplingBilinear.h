// SpatialUpSamplingBilinear.h: cudnn.SpatialUpSamplingBilinear, nn::SpatialUpSamplingBilinear on CUDA tensors
// (SpatialUpSamplingBase.h).
#pragma once

#include "cudnn/SpatialUpSamplingBase.h"
#include "nn/SpatialUpSamplingBilinear.h"

namespace cudnn {
using SpatialUpSamplingBilinear = SpatialUpSamplingBase<nn::SpatialUpSamplingBilinear>;
}  // namespace cudnn
