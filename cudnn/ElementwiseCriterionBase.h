// ElementwiseCriterionBase.h: what the cudnn elementwise criteria share (BCE, BCEWithLogits,
// SmoothL1, Abs, DistKLDiv, HingeEmbedding, MultiLabelSoftMargin): nn's checks and terms
// (nn::ElementwiseCriterionBase), then one kernel over the elements computing nn's per-element
// functions (nn/kernels/ElementwiseLoss.h) in double, for float32, float64, float16 and bfloat16
// data: the loss is summed in float64 in a fixed order and read once (the double forward
// returns), the gradient costs no host read and is written in the input's dtype.
#pragma once

#include <concepts>
#include <string>

#include "cudnn/Twin.h"
#include "nn/Buffers.h"
#include "nn/ElementwiseCriterionBase.h"

namespace cudnn {

namespace detail {
// The sum of the terms over the elements / t.divisor, and the gradient into gradInput (buffer
// of input's shape and dtype). input and target: CUDA tensors of one dtype and shape, checked.
double elementwise_loss(const Tensor& input, const Tensor& target, const nn::ElementTerms& t);
void elementwise_gradient(const Tensor& input, const Tensor& target, const nn::ElementTerms& t, Tensor& gradInput);
}  // namespace detail

template <std::derived_from<nn::ElementwiseCriterionBase> Base>
class ElementwiseCriterionBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  double updateOutput(const tensor::Tensor& input, const tensor::Tensor& target) override {
    const nn::ElementTerms t = checked(input, target, "updateOutput");
    this->output = detail::elementwise_loss(input, target, t);
    return this->output;
  }

  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& target) override {
    const nn::ElementTerms t = checked(input, target, "updateGradInput");
    detail::elementwise_gradient(input, target, t, this->gradInput);
    return this->gradInput;
  }

 private:
  nn::ElementTerms checked(const tensor::Tensor& input, const tensor::Tensor& target, const char* method) const {
    const std::string w = this->checkCudaInput(method, input);
    nn::check_matches(w, target, input, "target", "input");
    return this->checkedTerms(input, target, method);
  }
};

}  // namespace cudnn
