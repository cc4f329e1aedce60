// ClassCriterionBase.cpp: the four classification twins' losses and gradients over NLLPlan.
#include "cudnn/ClassCriterionBase.h"

#include "cudnn/ops/nll.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
// The log-probabilities buffer, in NLLPlan::cross_entropy_dtype on x's device (the scores go
// to the plan unconverted).
void ensure_log_probs(Tensor& buf, const tensor::Shape& shape, const Tensor& x) {
  const tensor::DType dtype = NLLPlan::cross_entropy_dtype(x.dtype());
  if (buf.defined() && buf.dtype() == dtype && buf.device() == x.device() && buf.sizes() == shape &&
      buf.is_contiguous()) {
    return;  // the steady state: nothing to make
  }
  nn::ensure(buf, shape, tensor::empty({0}, dtype, x.device()));
}
}  // namespace

ClassCriterionCompute::ClassCriterionCompute() : plan_(std::make_unique<NLLPlan>()) {}
ClassCriterionCompute::~ClassCriterionCompute() = default;

double ClassCriterionCompute::loss(const std::string& where, const Tensor& input, const Tensor& target,
                                   const ClassCriterionFields& f) {
  const Tensor x = NLLPlan::canonical(where, input, target, f.weights, f.spatialDims);
  if (!f.logProbs) return plan_->nll(where, x, target, f.weights, f.sizeAverage, f.ignoreIndex);
  ensure_log_probs(*f.logProbs, input.sizes(), x);
  return plan_->cross_entropy(where, x, target, f.weights, f.sizeAverage, f.ignoreIndex, f.logProbs->view(x.sizes()));
}

void ClassCriterionCompute::gradient(const std::string& where, const Tensor& input, const Tensor& target,
                                     const ClassCriterionFields& f, Tensor& gradInput) {
  const Tensor x = NLLPlan::canonical(where, input, target, f.weights, f.spatialDims);
  const Tensor dx = nn::ensure(gradInput, input.sizes(), x).view(x.sizes());
  if (!f.logProbs) return plan_->nll_grad(target, f.weights, f.sizeAverage, f.ignoreIndex, dx);
  ensure_log_probs(*f.logProbs, input.sizes(), x);
  plan_->cross_entropy_grad(x, target, f.weights, f.sizeAverage, f.ignoreIndex, f.logProbs->view(x.sizes()), dx);
}

}  // namespace cudnn::detail
