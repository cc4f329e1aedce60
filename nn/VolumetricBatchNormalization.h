// VolumetricBatchNormalization.h: batch normalisation per feature map of an [N x C x T x H x W] input
// ([C x T x H x W] accepted in evaluation only, as Torch), over N and the spatial positions; all
// semantics (statistics, momentum, evaluation, affine) are nn::BatchNormalization's, which
// this only configures with nDim = 5. Prints "nn.VolumetricBatchNormalization (5D) (C)".
// Twin: cudnn::VolumetricBatchNormalization (CUDNN_BATCHNORM_SPATIAL).
#pragma once

#include "nn/BatchNormalization.h"

namespace nn {

class VolumetricBatchNormalization : public BatchNormalizationModule<VolumetricBatchNormalization, 5> {
 public:
  using BatchNormalizationModule::BatchNormalizationModule;
  static constexpr std::string_view kTypeName = "nn.VolumetricBatchNormalization";
};

}  // namespace nn
