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
// nn's plain mean (and cuDNN's NCHW kernels) give +-Inf. For each channel c whose running_mean
// came out NaN or +-Inf, this recomputes it from x and `previous` (a copy of running_mean taken
// before the call): running_mean[c] = (1 - factor) * previous[c] + factor * mean(x[:, c]).
// Finite channels are left alone; the check costs one read per channel.
void batch_norm_repair_running_mean(const tensor::Tensor& x, BatchNormSizes sizes, const tensor::Tensor& previous,
                                    const tensor::Tensor& running_mean, double factor);

}  // namespace cudnn::kernels
