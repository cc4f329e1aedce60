// ClassNLLCriterion.cpp
#include "nn/ClassNLLCriterion.h"

#include "nn/kernels/CrossEntropyKernel.h"

namespace nn {

ClassNLLCriterion::ClassNLLCriterion(Tensor weights_, bool sizeAverage_, int64_t ignoreIndex_)
    : weights(kernels::checked_class_weights(std::string(kTypeName) + ": ", weights_)),
      sizeAverage(sizeAverage_),
      ignoreIndex(ignoreIndex_) {}

double ClassNLLCriterion::updateOutput(const Tensor& input, const Tensor& target) {
  const std::string w = where("updateOutput");
  const kernels::ClassLayout l = kernels::batch_class_layout(w, input, target);
  kernels::check_class_weights(w, weights, input, l.classes);
  const Tensor indices = kernels::class_indices(target, l.classes, ignoreIndex, w);
  output = kernels::class_nll_loss(input.contiguous(), indices, weights, ignoreIndex, sizeAverage, l);
  return output;
}

const Tensor& ClassNLLCriterion::updateGradInput(const Tensor& input, const Tensor& target) {
  const std::string w = where("updateGradInput");
  const kernels::ClassLayout l = kernels::batch_class_layout(w, input, target);
  kernels::check_class_weights(w, weights, input, l.classes);
  const Tensor indices = kernels::class_indices(target, l.classes, ignoreIndex, w);
  kernels::class_nll_backward(input.contiguous(), indices, weights, ignoreIndex, sizeAverage, l, gradInput);
  return gradInput;
}

}  // namespace nn
