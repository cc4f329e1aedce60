// GroupNorm.h: group normalisation's kernels for cudnn::GroupNorm and cudnn::InstanceNorm
// (cudnn/GroupNormBase.h), over a contiguous x [N x C x S] in G groups: group (n, g) is the
// contiguous row r = n G + g of M = C/G * S values. The formulas and their order are
// nn::GroupNormBase's (nn/kernels/GroupNorm.h), computed in acc_t<T> (float for float32 and
// 16-bit data, double for float64); mean, rstd and var are acc_t<T> [N x G], weight, bias and
// the running statistics of x's dtype (undefined without affine / tracking):
//   statistics   one block a row, two passes (mean, then the centred variance, biased); var
//                (the biased variance) written where defined;
//   running      InstanceNorm (G = C): in training running = (1 - momentum) running + momentum
//                mean_n(stat), the variance unbiased by S / (S - 1) (Note [Instance norm's
//                running statistics] in nn/GroupNormBase.cpp); in evaluation mean and rstd
//                from the running statistics;
//   apply        y = (x - mean) rstd [* weight[c] + bias[c]], element-wise;
//   dx           one block a row: rstd (g - sum(g) / M - xhat sum(g xhat) / M), g = dy [*
//                weight[c]]; with fixedStatistics rstd g, element-wise;
//   scale        g = dy weight[c] in the data type, element-wise (for cuDNN's layer norm
//                backward under groupnorm.engine=cudnn: Note [Group norm as a layer norm] in
//                cudnn/ops/group_norm.cpp);
//   parameters   gradWeight[c] += scale sum(dy xhat), gradBias[c] += scale sum(dy) over the
//                samples and positions: fixed chunks of samples, then the chunks in order (no
//                atomics: the same bits from run to run).
// NaN and Inf follow from IEEE arithmetic, as nn's. Every function returns at once on an empty x.
#pragma once

#include <cstdint>

#include "tensor/Tensor.h"

namespace cudnn::kernels {

struct GroupDims {
  int64_t N, C, G, S;
};

void group_norm_statistics(const tensor::Tensor& x, const GroupDims& d, double eps, const tensor::Tensor& mean,
                           const tensor::Tensor& rstd, const tensor::Tensor& var);
void instance_norm_update_running(const tensor::Tensor& mean, const tensor::Tensor& var, const GroupDims& d,
                                  double momentum, const tensor::Tensor& runningMean, const tensor::Tensor& runningVar);
void instance_norm_running_statistics(const tensor::Tensor& runningMean, const tensor::Tensor& runningVar,
                                      const GroupDims& d, double eps, const tensor::Tensor& mean,
                                      const tensor::Tensor& rstd);
void group_norm_apply(const tensor::Tensor& x, const GroupDims& d, const tensor::Tensor& mean,
                      const tensor::Tensor& rstd, const tensor::Tensor& weight, const tensor::Tensor& bias,
                      const tensor::Tensor& y);
void group_norm_backward_input(const tensor::Tensor& x, const tensor::Tensor& dy, const GroupDims& d,
                               const tensor::Tensor& mean, const tensor::Tensor& rstd, const tensor::Tensor& weight,
                               bool fixedStatistics, const tensor::Tensor& dx);
void group_norm_scale_channels(const tensor::Tensor& dy, const GroupDims& d, const tensor::Tensor& weight,
                               const tensor::Tensor& g);
void group_norm_backward_params(const tensor::Tensor& x, const tensor::Tensor& dy, const GroupDims& d,
                                const tensor::Tensor& mean, const tensor::Tensor& rstd,
                                const tensor::Tensor& gradWeight, const tensor::Tensor& gradBias, double scale);

}  // namespace cudnn::kernels
