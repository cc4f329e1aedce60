// SpatialCrossEntropyCriterion.cpp
#include "nn/SpatialCrossEntropyCriterion.h"

#include "nn/kernels/CrossEntropyKernel.h"

namespace nn {

SpatialCrossEntropyCriterion::SpatialCrossEntropyCriterion(Tensor weights_, bool sizeAverage_, int64_t ignoreIndex_)
    : weights(kernels::checked_class_weights("nn.SpatialCrossEntropyCriterion: ", weights_)),
      sizeAverage(sizeAverage_),
      ignoreIndex(ignoreIndex_) {}

double SpatialCrossEntropyCriterion::updateOutput(const Tensor& input, const Tensor& target) {
  const std::string w = where("updateOutput");
  const kernels::ClassLayout l = kernels::pixel_class_layout(w, input, target, 2);
  kernels::check_class_weights(w, weights, input, l.classes);
  const Tensor indices = kernels::class_indices(target, l.classes, ignoreIndex, w);
  output = kernels::cross_entropy_loss(input.contiguous(), indices, weights, ignoreIndex, sizeAverage, l, logProbs);
  return output;
}

const Tensor& SpatialCrossEntropyCriterion::updateGradInput(const Tensor& input, const Tensor& target) {
  const std::string w = where("updateGradInput");
  const kernels::ClassLayout l = kernels::pixel_class_layout(w, input, target, 2);
  kernels::check_class_weights(w, weights, input, l.classes);
  const Tensor indices = kernels::class_indices(target, l.classes, ignoreIndex, w);
  kernels::cross_entropy_backward(input.contiguous(), indices, weights, ignoreIndex, sizeAverage, l, logProbs,
                                  gradInput);
  return gradInput;
}

}  // namespace nn
