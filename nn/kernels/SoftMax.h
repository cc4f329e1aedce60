// SoftMax.h: (log-)softmax over the middle dimension of a contiguous [outer x channels x
// inner] array, at each (outer, inner) position; numerically stable (the maximum is
// subtracted first). Serves SoftMax ([batch x n]: inner = 1), SpatialSoftMax (inner = H*W)
// and VolumetricSoftMax (inner = T*H*W), in the meaning of cuDNN's CUDNN_SOFTMAX_MODE_CHANNEL
// over an [outer x channels x inner x 1] tensor. The backward pass reads only the output.
#pragma once

#include <cstdint>

namespace nn::kernels {

template <class T>
void softmax_forward(const T* x, T* y, int64_t outer, int64_t channels, int64_t inner, bool log);
// softmax: dx = y * (dy - sum_c dy*y); log-softmax: dx = dy - exp(y) * sum_c dy
template <class T>
void softmax_backward(const T* y, const T* dy, T* dx, int64_t outer, int64_t channels, int64_t inner,
                      bool log);

}  // namespace nn::kernels
