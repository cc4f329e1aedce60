// SpatialBatchNormalization.h: batch normalisation per feature map of an [N x C x H x W] input
// ([C x H x W] accepted in evaluation only, as Torch), over N and the spatial positions; all
// semantics (statistics, momentum, evaluation, affine) are nn::BatchNormalization's, which
// this only configures with nDim = 4. Prints "nn.SpatialBatchNormalization (4D) (C)".
// Twin: cudnn::SpatialBatchNormalization (CUDNN_BATCHNORM_SPATIAL).
#pragma once

#include "nn/BatchNormalization.h"

namespace nn {

class SpatialBatchNormalization : public BatchNormalization {
 public:
  explicit SpatialBatchNormalization(int64_t nOutput, double eps = 1e-5, double momentum = 0.1, bool affine = true);
  static constexpr std::string_view kTypeName = "nn.SpatialBatchNormalization";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn
