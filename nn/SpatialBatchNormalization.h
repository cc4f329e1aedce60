// SpatialBatchNormalization.h: batch normalisation per feature map of an [N x C x H x W] input
// ([C x H x W] accepted in evaluation only, as Torch), over N and the spatial positions; all
// semantics (statistics, momentum, evaluation, affine) are nn::BatchNormalization's, which
// this only configures with nDim = 4. Prints "nn.SpatialBatchNormalization (4D) (C)".
// Twin: cudnn::SpatialBatchNormalization (CUDNN_BATCHNORM_SPATIAL).
#pragma once

#include "nn/BatchNormalization.h"

namespace nn {

class SpatialBatchNormalization : public BatchNormalizationModule<SpatialBatchNormalization, 4> {
 public:
  using BatchNormalizationModule::BatchNormalizationModule;
  static constexpr std::string_view kTypeName = "nn.SpatialBatchNormalization";
};

}  // namespace nn
