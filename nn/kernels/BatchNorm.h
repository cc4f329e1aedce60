// BatchNorm.h: batch normalisation over a contiguous [N x C x S] array (S = product of the
// spatial sizes, 1 for [N x C]), per channel c over its N*S values. Statistics are
// accumulated in double; optional arrays (weight, bias, dx, gradWeight, gradBias) may be
// null. Serves nn::BatchNormalization and its Spatial/Volumetric subclasses.
#pragma once

#include <cstdint>

namespace nn::kernels {

// Batch mean and invstd = 1/sqrt(biased var + eps) per channel, and, when running_mean is
// not null, running = (1 - momentum) * running + momentum * stat with the UNBIASED variance
// (N*S > 1 required).
template <class T>
void batchnorm_statistics(const T* x, int64_t N, int64_t C, int64_t S, double eps, T* mean, T* invstd,
                          double momentum, T* running_mean, T* running_var);
// y = (x - mean) * invstd * weight + bias
template <class T>
void batchnorm_forward(const T* x, T* y, int64_t N, int64_t C, int64_t S, const T* mean, const T* invstd,
                       const T* weight, const T* bias);
// With batch statistics (train) the gradient flows through mean and invstd:
//   dx = (dy - mean(dy) - xhat * mean(dy * xhat)) * invstd * w;
// with fixed statistics (evaluation) dx = dy * invstd * w.
// gradWeight += scale * sum(dy * xhat), gradBias += scale * sum(dy).
template <class T>
void batchnorm_backward(const T* x, const T* dy, T* dx, int64_t N, int64_t C, int64_t S, const T* mean,
                        const T* invstd, const T* weight, bool train, T* gradWeight, T* gradBias, double scale);

}  // namespace nn::kernels
