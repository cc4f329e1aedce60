// VolumetricCrossEntropyCriterion.h: SpatialCrossEntropyCriterion for volumes and videos,
// as cudnn.torch's: input [N x C x T x H x W] scores, target [N x T x H x W] 0-based
// classes; the loss is averaged over all N*T*H*W voxels (by their total class weight with
// weights) under sizeAverage, summed otherwise. Twin: cudnn::VolumetricCrossEntropyCriterion.
#pragma once

#include "nn/Criterion.h"

namespace nn {

class VolumetricCrossEntropyCriterion : public Criterion {
 public:
  explicit VolumetricCrossEntropyCriterion(Tensor weights = {}, bool sizeAverage = true, int64_t ignoreIndex = -100);

  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;
  std::string type_name() const override { return "nn.VolumetricCrossEntropyCriterion"; }

  Tensor weights;  // [classes], or undefined for all ones
  bool sizeAverage;
  int64_t ignoreIndex;
  Tensor logProbs;  // log_softmax(input) of the last call

 protected:
  void visitState(StateVisitor& v) override { v.buffer("weights", weights); }
};

}  // namespace nn
