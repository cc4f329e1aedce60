// BatchNorm.h: batch normalisation's gradient in evaluation mode, which cuDNN has no call
// for (its backward differentiates through the batch statistics). With the running
// statistics fixed, per channel c of x, dy [N x C x S] (contiguous or strided, see BatchNormSizes):
//   dx            = dy * weight[c] * invstd[c],   invstd[c] = 1 / sqrt(running_var[c] + eps)
//   gradWeight[c] += scale * sum(dy * (x - running_mean[c]) * invstd[c])
//   gradBias[c]   += scale * sum(dy)
// weight undefined means 1 (affine off); dx undefined skips dx, gradWeight undefined skips
// both parameter gradients. The statistics and gradients are float32 for 16-bit and float32
// data, float64 for float64 data (cuDNN's rule); sums are accumulated in double, one block
// per channel in a fixed order, so the result is deterministic.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

// x, dy and dx share one layout: element (n, c, s) at n*strideN + c*strideC + s*strideS
// (0 strides: contiguous [N x C x S]; channels-last data has strides [S*C, 1, C]).
struct BatchNormSizes {
  int64_t N, C, S;
  int64_t strideN = 0, strideC = 0, strideS = 0;
};

void batch_norm_eval_backward(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& dx,
                              BatchNormSizes sizes, const tensor::Tensor& weight, const tensor::Tensor& running_mean,
                              const tensor::Tensor& running_var, double eps, const tensor::Tensor& gradWeight,
                              const tensor::Tensor& gradBias, double scale);

// Note [Persistent batch norm and Inf]: cuDNN's channels-last (persistent) training forward
// folds x into its mean with a running update, which turns a channel holding +-Inf into NaN;
// nn's plain mean (and cuDNN's NCHW kernels) give +-Inf. So that forward is handed `increments`
// (2 C zeros) in place of the running statistics, which its update turns into factor * the batch
// mean and factor * the unbiased batch variance, and this folds them in:
// running = (1 - factor) * running + increment, the mean's from x where its increment is not
// finite: running_mean[c] = (1 - factor) * running_mean[c] + factor * mean(x[:, c]). It zeroes
// the increments again for the next call (under a CUDA graph too). Reading the batch statistics
// this way needs no copy of the running mean before the call (a device copy per batch norm).
//
// Note [The count in the fold]
// A training forward also adds one to num_batches_tracked, an int64 scalar on the device: one
// more kernel per batch norm (53 in ResNet-50's step, 0.06-0.11 ms of it on the H100:
// docs/performance.md). Where this fold runs, it makes that increment itself; `count` (undefined
// for none) must be an int64 scalar on x's device.
void batch_norm_fold_running_stats(const tensor::Tensor& x, BatchNormSizes sizes, const tensor::Tensor& increments,
                                   const tensor::Tensor& running_mean, const tensor::Tensor& running_var, double factor,
                                   const tensor::Tensor& count = tensor::Tensor());

// Note [Fused ReLU backward and non-finite values]
// cuDNN's BN_ACTIVATION / BN_ADD_ACTIVATION backward passes dy through where the output y is
// NaN (its mask is not nn's y > 0), so a channel holding a NaN output gets other gradients
// than nn's, whose relu' passes nothing there: dz and the bias gradient gain dy where nn's gain
// 0, and dx and the weight gradient follow. So each channel whose output may hold a NaN is
// flagged, and after the fused backward its gradients are computed again by nn's rule; the
// others keep cuDNN's. Without the sum a NaN output needs non-finite statistics or parameters,
// which the repair reads off [C] values itself; with the sum (z is arbitrary) the flags come
// from a read of y after the fused forward. The parameter gradients come from cuDNN fresh
// (alpha 1, beta 0) and the repair blends them in.

// flags (4 C bytes: C ints) [c] = 1 where channels-last dense y holds a NaN in channel c, else 0.
void batch_norm_flag_nan_channels(const tensor::Tensor& y, int64_t C, const tensor::Tensor& flags);

// The [C] vectors of batch_norm_relu_backward_repair, of the statistics' dtype.
struct BatchNormParams {
  tensor::Tensor gamma, beta, save_mean, save_invstd;  // the forward's
  tensor::Tensor fresh_dgamma, fresh_dbeta;            // cuDNN's gradients; rewritten where flagged
  tensor::Tensor dgamma, dbeta;                        // blend * d + alpha * fresh
};
// Per channel c, flagged by flags (undefined: where save_mean, save_invstd, gamma or beta is not
// finite): dy' = dy where y > 0, else 0; dz = dy' (when defined); dx, and the fresh parameter
// gradients sum(dy' * xhat) and sum(dy'), by nn's batch-norm backward from the saved
// statistics. Then for every channel dgamma = blend * dgamma + alpha * fresh_dgamma, dbeta
// likewise (blend 0 overwrites). x, y, dy, dx, dz share `sizes`' layout.
void batch_norm_relu_backward_repair(const tensor::Tensor& x, const tensor::Tensor& y, const tensor::Tensor& dy,
                                     const tensor::Tensor& dx, const tensor::Tensor& dz, BatchNormSizes sizes,
                                     const tensor::Tensor& flags, const BatchNormParams& params, double alpha,
                                     double blend);

}  // namespace cudnn::kernels
