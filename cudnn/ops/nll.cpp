// nll.cpp
#include "cudnn/ops/nll.h"

#include "cudnn/kernels/ClassNLL.h"
#include "nn/Buffers.h"
#include "nn/kernels/CrossEntropyKernel.h"

namespace cudnn {

namespace {
Tensor contiguous(const Tensor& t) { return t.defined() ? t.contiguous() : t; }
Tensor as(const Tensor& weights, DType dtype) { return weights.defined() ? weights.to(dtype) : weights; }
}  // namespace

Tensor NLLPlan::canonical(const std::string& where, const Tensor& input, const Tensor& target, const Tensor& weights,
                          int spatialDims) {
  check_cuda(where, input, "input");
  if (!target.defined()) throw tensor::Error(where + "target is undefined");
  if (target.device() != input.device()) {
    throw tensor::Error(where + "expected the target on " + input.device().str() + " (the input's device), got " +
                        target.description());
  }
  const nn::kernels::ClassLayout l = spatialDims == 0
                                         ? nn::kernels::batch_class_shape(where, input, target)
                                         : nn::kernels::pixel_class_shape(where, input, target, spatialDims);
  nn::kernels::check_class_weights(where, weights, input, l.classes);
  return input.contiguous().view({l.outer, l.classes, l.inner});
}

Tensor NLLPlan::indices(const Tensor& target) {
  if (target.dtype() == DType::Int64 && target.is_contiguous()) return target;
  if (!indices_.defined() || indices_.device() != target.device()) {
    indices_ = tensor::empty(target.sizes(), DType::Int64, target.device());
  } else if (indices_.sizes() != target.sizes()) {
    indices_.resize_(target.sizes());
  }
  kernels::class_indices(target.contiguous(), indices_);
  return indices_;
}

double NLLPlan::nll(const std::string& where, const Tensor& logp, const Tensor& target, const Tensor& weights,
                    bool sizeAverage, int64_t ignoreIndex) {
  const kernels::NLLSums s = kernels::nll_sums(logp, indices(target), contiguous(weights), ignoreIndex);
  if (s.first_bad >= 0) {
    // The error path may read the target: nn's own check names the value and its position.
    nn::kernels::class_indices(target.cpu(), logp.size(1), ignoreIndex, where);
    throw tensor::Error(where + "target at position " + std::to_string(s.first_bad) +
                        " (flattened) is not a class index in [0, " + std::to_string(logp.size(1) - 1) + "]");
  }
  return s.loss / (sizeAverage && s.weight > 0 ? s.weight : 1.0);
}

void NLLPlan::nll_grad(const Tensor& target, const Tensor& weights, bool sizeAverage, int64_t ignoreIndex,
                      const Tensor& dlogp) {
  kernels::nll_backward_normalized(indices(target), contiguous(weights), ignoreIndex, sizeAverage, dlogp);
}

DType NLLPlan::cross_entropy_dtype(DType scores) {
  return scores == DType::Float16 || scores == DType::BFloat16 ? DType::Float32 : scores;
}

void NLLPlan::log_softmax(const Tensor& scores, const Tensor& logp) {
  if (kernels::log_softmax_rows(scores, logp)) return;  // [N x C]: one read, no converted copy
  softmax_.forward(SoftmaxAlgo::Log, SoftmaxMode::Channel,
                   scores.dtype() == logp.dtype() ? scores : scores.to(logp.dtype()), logp);
}

double NLLPlan::cross_entropy(const std::string& where, const Tensor& scores, const Tensor& target,
                             const Tensor& weights, bool sizeAverage, int64_t ignoreIndex, const Tensor& logp) {
  log_softmax(scores, logp);
  return nll(where, logp, target, as(weights, logp.dtype()), sizeAverage, ignoreIndex);
}

void NLLPlan::cross_entropy_grad(const Tensor& scores, const Tensor& target, const Tensor& weights, bool sizeAverage,
                               int64_t ignoreIndex, const Tensor& logp, const Tensor& dx) {
  // [N x C] scores: the log-softmax, the NLL gradient and the log-softmax backward in one
  // kernel, written in dx's dtype (docs/performance.md, the cross-entropy row)
  if (kernels::cross_entropy_backward(scores, indices(target), contiguous(as(weights, logp.dtype())), ignoreIndex,
                                      sizeAverage, logp, dx)) {
    return;
  }
  log_softmax(scores, logp);
  nn::ensure(dlogp_, logp.sizes(), logp);
  nll_grad(target, as(weights, logp.dtype()), sizeAverage, ignoreIndex, dlogp_);
  // log-softmax backward: dx = dlogp - softmax * sum_c dlogp
  if (dx.dtype() == logp.dtype()) {
    softmax_.backward(SoftmaxAlgo::Log, SoftmaxMode::Channel, logp, dlogp_, dx);
  } else {
    softmax_.backward(SoftmaxAlgo::Log, SoftmaxMode::Channel, logp, dlogp_, nn::ensure(dx_, logp.sizes(), logp));
    Tensor(dx).copy_(dx_);  // a handle on the same storage
  }
}

}  // namespace cudnn
