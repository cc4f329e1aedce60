// PixelCrossEntropyBase.h: what SpatialCrossEntropyCriterion (2 spatial dims) and
// VolumetricCrossEntropyCriterion (3) share: cross entropy of every pixel's class scores,
// input [N x C x spatial...], target [N x spatial...] of 0-based classes (any dtype holding
// integers), class weights, sizeAverage (divide by the targets' total weight), ignoreIndex.
// The subclasses only fix the number of spatial dims and their name.
#pragma once

#include <string>
#include <string_view>

#include "nn/Criterion.h"

namespace nn {

class PixelCrossEntropyBase : public Criterion {
 public:
  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;

  Tensor weights;  // [classes], or undefined for all ones
  bool sizeAverage;
  int64_t ignoreIndex;
  Tensor logProbs;  // log_softmax(input) of the last call

 protected:
  PixelCrossEntropyBase(int spatialDims, std::string_view name, Tensor weights, bool sizeAverage, int64_t ignoreIndex);
  void visitState(StateVisitor& v) override { v.buffer("weights", weights); }

  int spatialDims_;
};

}  // namespace nn
