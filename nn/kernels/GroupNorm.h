// GroupNorm.h: the CPU kernels of nn::GroupNorm and nn::InstanceNorm (nn/GroupNormBase.h), over
// a contiguous input [N x C x S] split into G groups of C/G channels: group (n, g) is the
// contiguous row r = n G + g of C/G * S elements, and element j of it belongs to channel
// c = g C/G + j / S. In the input's dtype (float or double), every sum in a fixed order:
//   statistics  mean[r] = sum(x) / M, var = sum((x - mean)^2) / M (two passes, biased; M =
//               C/G * S), rstd[r] = 1 / sqrt(var + eps), and var[r] where var is not null;
//   apply       y = (x - mean[r]) rstd[r] [* weight[c] + bias[c]];
//   dx          rstd (g - sum(g) / M - xhat sum(g xhat) / M), g = dy [* weight[c]], or with
//               fixedStatistics (statistics that do not depend on x: InstanceNorm's running
//               ones) rstd g;
//   parameters  gradWeight[c] += scale sum_(n, s)(dy xhat), gradBias[c] += scale sum_(n, s)(dy).
// weight and bias are nullptr without affine. NaN and Inf follow from IEEE arithmetic.
#pragma once

#include <cstdint>

namespace nn::kernels {

// The sizes of a grouped normalisation: N samples, C channels in G groups, S values a channel.
struct GroupShape {
  int64_t N, C, G, S;
};

template <class T>
void group_norm_statistics(const T* x, const GroupShape& s, double eps, T* mean, T* rstd, T* var);
template <class T>
void group_norm_apply(const T* x, const GroupShape& s, const T* mean, const T* rstd, const T* weight, const T* bias,
                      T* y);
template <class T>
void group_norm_backward_input(const T* x, const T* dy, const GroupShape& s, const T* mean, const T* rstd,
                               const T* weight, bool fixedStatistics, T* dx);
template <class T>
void group_norm_backward_params(const T* x, const T* dy, const GroupShape& s, const T* mean, const T* rstd, T scale,
                                T* gradWeight, T* gradBias);

}  // namespace nn::kernels
