// Linear.h: y = x W^T + b over contiguous rows, the forward of nn::Linear and of
// nn::MultiheadAttention's projections: x [n x in], weight [out x in], bias [out] or nullptr,
// y [n x out] (written, not accumulated).
#pragma once

#include <cstdint>

namespace nn::kernels {

template <class T>
void linear_forward(const T* x, const T* weight, const T* bias, T* y, int64_t n, int64_t in, int64_t out);

}  // namespace nn::kernels
