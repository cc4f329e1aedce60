// SpatialCrossEntropyCriterion.h: cross entropy of every pixel's class scores, as
// cudnn.torch's (SpatialLogSoftMax over the channels + SpatialClassNLLCriterion): input
// [N x C x H x W] scores, target [N x H x W] 0-based classes (any dtype holding integers);
// the loss is averaged over all N*H*W pixels (by their total class weight with weights) under
// sizeAverage, summed otherwise. Twin: cudnn::SpatialCrossEntropyCriterion.
#pragma once

#include "nn/Criterion.h"

namespace nn {

class SpatialCrossEntropyCriterion : public Criterion {
 public:
  explicit SpatialCrossEntropyCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100);

  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;
  std::string type_name() const override { return "nn.SpatialCrossEntropyCriterion"; }

  Tensor weights;  // [classes], or undefined for all ones
  bool sizeAverage;
  int64_t ignoreIndex;
  Tensor logProbs;  // log_softmax(input) of the last call

 protected:
  void visitState(StateVisitor& v) override { v.buffer("weights", weights); }
};

}  // namespace nn
