// ClassNLL.h: the GPU kernels behind the cudnn criteria (ClassNLL, CrossEntropy and the
// spatial/volumetric cross entropies): negative log-likelihood over log-probabilities
// logp [N x C x inner] (inner = 1 for [N x C]) and Int64 targets [N x inner], with optional
// class weights [C] and an ignored class. The reduction runs in one block in a fixed order,
// so the loss is deterministic. Targets out of range are reported with their position.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/Tensor.h"

namespace cudnn::kernels {

struct NLLSums {
  double loss = 0;    // sum over samples of -w[t] * logp[n, t, i]
  double weight = 0;  // sum over samples of w[t] (the sizeAverage divisor)
  int64_t first_bad = -1;  // flattened position of the first target out of range, -1 when none
};

// One pass over the targets and one host read (the sums come back together). With a bad
// target, first_bad says where and the sums cover only the good ones. picked, where given
// (cross_entropy_rows_forward's), replaces logp's values at the targets.
NLLSums nll_sums(const tensor::Tensor& logp, const tensor::Tensor& target, const tensor::Tensor& weights,
                 int64_t ignore_index, const tensor::Tensor* picked = nullptr);
// The loss nll_sums gives the host, sum / (size_average and weight > 0 ? weight : 1), computed on
// the device into `loss` (one float64 element on logp's device): no host read, so capturable in a
// CUDA graph; targets out of range count nothing and are not reported.
void nll_loss_on_device(const tensor::Tensor& logp, const tensor::Tensor& target, const tensor::Tensor& weights,
                        int64_t ignore_index, bool size_average, const tensor::Tensor& loss,
                        const tensor::Tensor* picked = nullptr);
// nll_sums, throwing "<where>target <value> at position <i> (flattened) is out of range [0, C)".
NLLSums nll_forward(const tensor::Tensor& logp, const tensor::Tensor& target, const tensor::Tensor& weights,
                    int64_t ignore_index, const std::string& where);
// dlogp = 0 except dlogp[n, t, i] = -w[t] * scale. Targets out of range contribute nothing.
void nll_backward(const tensor::Tensor& target, const tensor::Tensor& weights, int64_t ignore_index, double scale,
                  const tensor::Tensor& dlogp);
// The same with scale = 1 / norm, norm being the counted targets' total weight under
// size_average when it is positive, else 1 (nn's normalisation). The total is summed on
// the device and read there: nothing waits for the host.
void nll_backward_normalized(const tensor::Tensor& target, const tensor::Tensor& weights, int64_t ignore_index,
                             bool size_average, const tensor::Tensor& dlogp);

// Cross entropy over [N x C] scores (contiguous, inner = 1), one block a row, the scores read
// once from memory (Note [Online log-sum-exp] in cudnn/kernels/DeviceMath.cuh), nothing
// converted first, computed in float32 (float64 for float64 scores). logp (contiguous, as many
// elements, the scores' dtype) gets their log-softmax over C, and picked ([N], contiguous,
// float32 or float64 as the computation) each counted target's log-probability before logp's
// rounding, which nll_sums reads for the loss: 16-bit scores lose no precision in the loss. target:
// contiguous Int64 [N]. False, having done nothing, for other layouts or dtypes.
bool cross_entropy_rows_forward(const tensor::Tensor& scores, const tensor::Tensor& target, int64_t ignore_index,
                                const tensor::Tensor& logp, const tensor::Tensor& picked);
// The same log-softmax, and in the same pass cross entropy's gradient into dx (contiguous, the
// scores' dtype): dlogp - exp(logp) * (the row's sum of dlogp), the log-softmax backward of
// nll_backward_normalized's dlogp, from the log-probabilities before their rounding. weights
// undefined or in the scores' dtype.
bool cross_entropy_backward(const tensor::Tensor& scores, const tensor::Tensor& target, const tensor::Tensor& weights,
                            int64_t ignore_index, bool size_average, const tensor::Tensor& logp,
                            const tensor::Tensor& dx);

// The value an index that is not an integer becomes in class_indices: out of every class range.
inline constexpr int64_t kNotAnIndex = INT64_MIN;
// indices (contiguous Int64) = target (contiguous, any dtype, as many elements), on the
// device; floating values that are not integers (or not finite, or beyond +-9e15, as nn's
// check) become kNotAnIndex, so nll_sums reports them as bad targets.
void class_indices(const tensor::Tensor& target, const tensor::Tensor& indices);

}  // namespace cudnn::kernels
