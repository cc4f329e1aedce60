// ClassCriterionBase.cpp: the four classification twins' losses and gradients over NLLPlan.
#include "cudnn/ClassCriterionBase.h"

#include "cudnn/ops/nll.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

ClassCriterionCompute::ClassCriterionCompute() : plan_(std::make_unique<NLLPlan>()) {}
ClassCriterionCompute::~ClassCriterionCompute() = default;

double ClassCriterionCompute::loss(const std::string& where, const Tensor& input, const Tensor& target,
                                   const ClassCriterionFields& f) {
  const Tensor x = NLLPlan::canonical(where, input, target, f.weights, f.spatialDims);
  if (!f.logProbs) return plan_->nll(where, x, target, f.weights, f.sizeAverage, f.ignoreIndex);
  nn::ensure(*f.logProbs, input.sizes(), x);
  return plan_->cross_entropy(where, x, target, f.weights, f.sizeAverage, f.ignoreIndex, f.logProbs->view(x.sizes()));
}

void ClassCriterionCompute::lossOnDevice(const std::string& where, const Tensor& input, const Tensor& target,
                                         const ClassCriterionFields& f, Tensor& out) {
  const Tensor x = NLLPlan::canonical(where, input, target, f.weights, f.spatialDims);
  if (!out.defined() || out.device() != x.device()) out = tensor::empty({}, tensor::DType::Float64, x.device());
  if (!f.logProbs) return plan_->nll_on_device(x, target, f.weights, f.sizeAverage, f.ignoreIndex, out);
  nn::ensure(*f.logProbs, input.sizes(), x);
  plan_->cross_entropy_on_device(x, target, f.weights, f.sizeAverage, f.ignoreIndex, f.logProbs->view(x.sizes()), out);
}

void ClassCriterionCompute::gradient(const std::string& where, const Tensor& input, const Tensor& target,
                                     const ClassCriterionFields& f, Tensor& gradInput) {
  const Tensor x = NLLPlan::canonical(where, input, target, f.weights, f.spatialDims);
  const Tensor dx = nn::ensure(gradInput, input.sizes(), x).view(x.sizes());
  if (!f.logProbs) return plan_->nll_grad(target, f.weights, f.sizeAverage, f.ignoreIndex, dx);
  nn::ensure(*f.logProbs, input.sizes(), x);
  plan_->cross_entropy_grad(x, target, f.weights, f.sizeAverage, f.ignoreIndex, f.logProbs->view(x.sizes()), dx);
}

}  // namespace cudnn::detail
