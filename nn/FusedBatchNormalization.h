// FusedBatchNormalization.h: a batch normalisation and the ReLU after it, as one module: the
// unit cudnn::fuse rewrites a (batch norm, ReLU) pair of a Sequential into (nn/FusedPair.h,
// Note [Fusion as a rewrite] in cudnn/Fuse.cpp). Children: modules[0] an nn::BatchNormalization
// (any of the family), modules[1] an nn::PointwiseBase. nn computes them in turn, exactly as a
// Sequential of the two; its twin cudnn::FusedBatchNormalization writes relu(bn(x)) in one
// cuDNN pass, and takes its gradient in one, where the activation is a ReLU (Note [Batch norm
// epilogues] in cudnn/ops/batch_norm.cpp). Prints on one line:
//   nn.FusedBatchNormalization(nn.SpatialBatchNormalization (4D) (64) + nn.ReLU)
#pragma once

#include "nn/BatchNormalization.h"
#include "nn/FusedPair.h"

namespace nn {

class FusedBatchNormalization : public FusedPair<FusedBatchNormalization, BatchNormalization> {
 public:
  using FusedPair::FusedPair;
  static constexpr std::string_view kTypeName = "nn.FusedBatchNormalization";
  static constexpr const char* kChildren = "a batch normalization and an activation";
  static constexpr const char* kChildTypes = "nn.BatchNormalization, nn.PointwiseBase";

  BatchNormalization& batchNorm(const char* method = "batchNorm") const { return first(method); }
};

}  // namespace nn
