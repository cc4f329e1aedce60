// nll.h: the compute of the cudnn classification criteria (ClassNLL, CrossEntropy,
// Spatial/VolumetricCrossEntropy), with nn's semantics (nn/kernels/CrossEntropyKernel.h):
// 0-based class targets of any dtype holding integers, optional class weights [C], an
// ignored index, and sizeAverage dividing by the counted targets' total weight (by 1 when
// that is 0: all targets ignored give loss 0 and zero gradients). Scores and
// log-probabilities are contiguous [N x C x inner] CUDA tensors (inner = 1 for [N x C]);
// log-softmax over C is our one-read kernel for [N x C] (cudnn/kernels/ClassNLL.h, the gradient
// in the same pass) and cuDNN's otherwise (SoftmaxAlgo::Log, channel mode on
// [N x C x inner x 1]); the NLL is cudnn/kernels/ClassNLL.h. A loss costs one host read (it comes back as a
// double), a gradient none. A bad target gets nn's own error message, position included.
#pragma once

#include <string>

#include "cudnn/ops/softmax.h"

namespace cudnn {

class NLLPlan {
 public:
  // Checks an nn criterion's input and target and the class weights, as nn does
  // (spatialDims 0: [C] or [N x C] scores with a one-element or [N] target; 2 or 3:
  // [N x C x (T x) H x W] with an [N x (T x) H x W] target), plus the devices: the input on
  // a CUDA device in a cuDNN dtype, the target on the same device. Returns the input as a
  // contiguous [N x C x inner] tensor.
  static Tensor canonical(const std::string& where, const Tensor& input, const Tensor& target, const Tensor& weights,
                          int spatialDims);

  // The loss of log-probabilities `logp` (ClassNLL); picked: kernels::nll_sums's.
  double nll(const std::string& where, const Tensor& logp, const Tensor& target, const Tensor& weights,
             bool sizeAverage, int64_t ignoreIndex, const Tensor* picked = nullptr);
  // Its gradient into dlogp (logp's shape).
  void nll_grad(const Tensor& target, const Tensor& weights, bool sizeAverage, int64_t ignoreIndex, const Tensor& dlogp);
  // The dtype cross entropy computes in: float32 for float16/bfloat16 scores (the loss and
  // the gradient would otherwise round to 16 bits), the scores' own otherwise.
  static DType cross_entropy_dtype(DType scores);
  // The loss of scores (CrossEntropy), in any cuDNN dtype, computed in cross_entropy_dtype: logp
  // (scores' shape and dtype, as PyTorch's log_softmax) gets their log-softmax over C, rounded.
  // Weights (the scores' dtype) are converted where the computation needs it.
  double cross_entropy(const std::string& where, const Tensor& scores, const Tensor& target, const Tensor& weights,
                      bool sizeAverage, int64_t ignoreIndex, const Tensor& logp);
  // The losses of nll() and cross_entropy() left on the device, into `loss` (a one-element float64
  // tensor on the input's device): no host read (capturable in a CUDA graph), the same double;
  // targets are not checked (one out of range counts nothing, as in the gradients).
  void nll_on_device(const Tensor& logp, const Tensor& target, const Tensor& weights, bool sizeAverage,
                     int64_t ignoreIndex, const Tensor& loss);
  void cross_entropy_on_device(const Tensor& scores, const Tensor& target, const Tensor& weights, bool sizeAverage,
                               int64_t ignoreIndex, const Tensor& logp, const Tensor& loss);
  // Its gradient into dx (scores' shape and dtype); logp is recomputed (backward may follow any
  // forward, as in nn).
  void cross_entropy_grad(const Tensor& scores, const Tensor& target, const Tensor& weights, bool sizeAverage,
                        int64_t ignoreIndex, const Tensor& logp, const Tensor& dx);

 private:
  // The target as contiguous Int64 class indices on its device (itself when it already is).
  Tensor indices(const Tensor& target);
  // nll() with the target's indices already made (target itself names a bad value).
  double nll_of(const std::string& where, const Tensor& logp, const Tensor& target, const Tensor& idx,
                const Tensor& weights, bool sizeAverage, int64_t ignoreIndex, const Tensor* picked);
  // cuDNN's log-softmax over C of scores in cross_entropy_dtype: into logp when that is its
  // dtype, else into a new tensor, returned (the caller rounds it into logp).
  Tensor log_softmax_wide(const Tensor& scores, const Tensor& logp);

  Tensor indices_, dlogp_, dx_, picked_;
  SoftmaxPlan softmax_;
};

}  // namespace cudnn
