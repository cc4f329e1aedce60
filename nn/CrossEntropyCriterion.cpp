// CrossEntropyCriterion.cpp
#include "nn/CrossEntropyCriterion.h"

#include "nn/kernels/CrossEntropyKernel.h"

namespace nn {

CrossEntropyCriterion::CrossEntropyCriterion(Tensor weights_, bool sizeAverage_, int64_t ignoreIndex_)
    : weights(kernels::checked_class_weights(std::string(kTypeName) + ": ", weights_)),
      sizeAverage(sizeAverage_),
      ignoreIndex(ignoreIndex_) {}

double CrossEntropyCriterion::updateOutput(const Tensor& input, const Tensor& target) {
  const std::string w = where("updateOutput");
  const kernels::ClassLayout l = kernels::batch_class_layout(w, input, target);
  kernels::check_class_weights(w, weights, input, l.classes);
  const Tensor indices = kernels::class_indices(target, l.classes, ignoreIndex, w);
  output = kernels::cross_entropy_loss(input.contiguous(), indices, weights, ignoreIndex, sizeAverage, l, logProbs);
  return output;
}

const Tensor& CrossEntropyCriterion::updateGradInput(const Tensor& input, const Tensor& target) {
  const std::string w = where("updateGradInput");
  const kernels::ClassLayout l = kernels::batch_class_layout(w, input, target);
  kernels::check_class_weights(w, weights, input, l.classes);
  const Tensor indices = kernels::class_indices(target, l.classes, ignoreIndex, w);
  kernels::cross_entropy_backward(input.contiguous(), indices, weights, ignoreIndex, sizeAverage, l, logProbs,
                                  gradInput);
  return gradInput;
}

}  // namespace nn
