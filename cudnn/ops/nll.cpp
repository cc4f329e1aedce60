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
                    bool sizeAverage, int64_t ignoreIndex, const Tensor* picked) {
  return nll_of(where, logp, target, indices(target), weights, sizeAverage, ignoreIndex, picked);
}

double NLLPlan::nll_of(const std::string& where, const Tensor& logp, const Tensor& target, const Tensor& idx,
                       const Tensor& weights, bool sizeAverage, int64_t ignoreIndex, const Tensor* picked) {
  const kernels::NLLSums s = kernels::nll_sums(logp, idx, contiguous(weights), ignoreIndex, picked);
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

Tensor NLLPlan::log_softmax_wide(const Tensor& scores, const Tensor& logp) {
  const DType wide = cross_entropy_dtype(scores.dtype());
  const Tensor out = logp.dtype() == wide ? logp : tensor::empty(logp.sizes(), wide, logp.device());
  softmax_.forward(SoftmaxAlgo::Log, SoftmaxMode::Channel, scores.dtype() == wide ? scores : scores.to(wide), out);
  return out;
}

double NLLPlan::cross_entropy(const std::string& where, const Tensor& scores, const Tensor& target,
                             const Tensor& weights, bool sizeAverage, int64_t ignoreIndex, const Tensor& logp) {
  // [N x C] scores: one kernel, and the loss from the targets' log-probabilities before their
  // rounding to logp's dtype (docs/performance.md, the cross-entropy row)
  const DType wide = cross_entropy_dtype(scores.dtype());
  nn::ensure(picked_, {scores.size(0)}, wide, scores.device());
  const Tensor idx = indices(target);  // once: a non-Int64 target takes a kernel to convert
  if (kernels::cross_entropy_rows_forward(scores, idx, ignoreIndex, logp, picked_)) {
    return nll_of(where, logp, target, idx, weights, sizeAverage, ignoreIndex, &picked_);
  }
  const Tensor wide_logp = log_softmax_wide(scores, logp);
  const double loss = nll_of(where, wide_logp, target, idx, as(weights, wide), sizeAverage, ignoreIndex, nullptr);
  if (wide_logp.raw_data() != logp.raw_data()) Tensor(logp).copy_(wide_logp);  // a handle on logp's storage
  return loss;
}

void NLLPlan::nll_on_device(const Tensor& logp, const Tensor& target, const Tensor& weights, bool sizeAverage,
                            int64_t ignoreIndex, const Tensor& loss) {
  kernels::nll_loss_on_device(logp, indices(target), contiguous(weights), ignoreIndex, sizeAverage, loss);
}

void NLLPlan::cross_entropy_on_device(const Tensor& scores, const Tensor& target, const Tensor& weights,
                                      bool sizeAverage, int64_t ignoreIndex, const Tensor& logp, const Tensor& loss) {
  // cross_entropy's two paths, the loss's division on the device
  const DType wide = cross_entropy_dtype(scores.dtype());
  nn::ensure(picked_, {scores.size(0)}, wide, scores.device());
  const Tensor idx = indices(target);
  if (kernels::cross_entropy_rows_forward(scores, idx, ignoreIndex, logp, picked_)) {
    kernels::nll_loss_on_device(logp, idx, contiguous(weights), ignoreIndex, sizeAverage, loss, &picked_);
    return;
  }
  const Tensor wide_logp = log_softmax_wide(scores, logp);
  kernels::nll_loss_on_device(wide_logp, idx, contiguous(as(weights, wide)), ignoreIndex, sizeAverage, loss);
  if (wide_logp.raw_data() != logp.raw_data()) Tensor(logp).copy_(wide_logp);
}

void NLLPlan::cross_entropy_grad(const Tensor& scores, const Tensor& target, const Tensor& weights, bool sizeAverage,
                               int64_t ignoreIndex, const Tensor& logp, const Tensor& dx) {
  // [N x C] scores: the log-softmax, the NLL gradient and the log-softmax backward in one
  // kernel, written in dx's dtype
  if (kernels::cross_entropy_backward(scores, indices(target), contiguous(weights), ignoreIndex, sizeAverage, logp,
                                      dx)) {
    return;
  }
  const Tensor wide_logp = log_softmax_wide(scores, logp);
  nn::ensure(dlogp_, wide_logp.sizes(), wide_logp);
  nll_grad(target, as(weights, wide_logp.dtype()), sizeAverage, ignoreIndex, dlogp_);
  // log-softmax backward: dx = dlogp - softmax * sum_c dlogp
  if (dx.dtype() == wide_logp.dtype()) {
    softmax_.backward(SoftmaxAlgo::Log, SoftmaxMode::Channel, wide_logp, dlogp_, dx);
  } else {
    softmax_.backward(SoftmaxAlgo::Log, SoftmaxMode::Channel, wide_logp, dlogp_,
                      nn::ensure(dx_, wide_logp.sizes(), wide_logp));
    Tensor(dx).copy_(dx_);  // a handle on the same storage
  }
  if (wide_logp.raw_data() != logp.raw_data()) Tensor(logp).copy_(wide_logp);
}

}  // namespace cudnn
