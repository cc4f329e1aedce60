// ClassCriterionBase.cpp: the checks of a call, then the kernels of nn/kernels/CrossEntropyKernel.h.
#include "nn/ClassCriterionBase.h"

#include "nn/kernels/CrossEntropyKernel.h"

namespace nn {

namespace {
// A call's input and target as the kernels take them, checked (throwing with `w` in front).
struct ClassCall {
  kernels::ClassLayout layout;
  Tensor indices;  // the targets as class indices
};

ClassCall checked_call(const std::string& w, const Tensor& input, const Tensor& target, int spatialDims,
                       const Tensor& weights, int64_t ignoreIndex) {
  const kernels::ClassLayout l = spatialDims == 0 ? kernels::batch_class_layout(w, input, target)
                                                  : kernels::pixel_class_layout(w, input, target, spatialDims);
  kernels::check_class_weights(w, weights, input, l.classes);
  return {l, kernels::class_indices(target, l.classes, ignoreIndex, w)};
}
}  // namespace

ClassCriterionBase::ClassCriterionBase(std::string_view name, ClassInput input, int spatialDims, Tensor weights_,
                                       bool sizeAverage_, int64_t ignoreIndex_)
    : weights(kernels::checked_class_weights(std::string(name) + ": ", weights_)),
      sizeAverage(sizeAverage_),
      ignoreIndex(ignoreIndex_),
      input_(input),
      spatialDims_(spatialDims) {}

double ClassCriterionBase::updateOutput(const Tensor& input, const Tensor& target) {
  const ClassCall c = checked_call(where("updateOutput"), input, target, spatialDims_, weights, ignoreIndex);
  const Tensor x = input.contiguous();
  output = input_ == ClassInput::Scores
               ? kernels::cross_entropy_loss(x, c.indices, weights, ignoreIndex, sizeAverage, c.layout, logProbs)
               : kernels::class_nll_loss(x, c.indices, weights, ignoreIndex, sizeAverage, c.layout);
  return output;
}

const Tensor& ClassCriterionBase::updateGradInput(const Tensor& input, const Tensor& target) {
  const ClassCall c = checked_call(where("updateGradInput"), input, target, spatialDims_, weights, ignoreIndex);
  const Tensor x = input.contiguous();
  if (input_ == ClassInput::Scores) {
    kernels::cross_entropy_backward(x, c.indices, weights, ignoreIndex, sizeAverage, c.layout, logProbs, gradInput);
  } else {
    kernels::class_nll_backward(x, c.indices, weights, ignoreIndex, sizeAverage, c.layout, gradInput);
  }
  return gradInput;
}

}  // namespace nn
