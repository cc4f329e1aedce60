// ElementwiseCriterionBase.cpp: the elementwise twins' loss and gradient over cudnn/kernels/ElementwiseLoss.h.
#include "cudnn/ElementwiseCriterionBase.h"

#include "cudnn/kernels/ElementwiseLoss.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
// The weights as the kernel reads them: float64, contiguous, on the input's device.
Tensor as_double(const Tensor& w, const Tensor& input) {
  return w.defined() ? w.to(input.device(), DType::Float64).contiguous() : Tensor();
}
}  // namespace

double elementwise_loss(const Tensor& input, const Tensor& target, const nn::ElementTerms& t) {
  const Tensor x = input.contiguous(), y = target.contiguous();
  return kernels::elementwise_loss_sum(t.params, x, y, as_double(t.weights, x), as_double(t.posWeight, x)) / t.divisor;
}

void elementwise_gradient(const Tensor& input, const Tensor& target, const nn::ElementTerms& t, Tensor& gradInput) {
  const Tensor x = input.contiguous(), y = target.contiguous();
  nn::ensure(gradInput, input.sizes(), x);
  kernels::elementwise_loss_grad(t.params, x, y, as_double(t.weights, x), as_double(t.posWeight, x), 1.0 / t.divisor,
                                 gradInput);
}

}  // namespace cudnn::detail
