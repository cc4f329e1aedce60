// Linear.cpp: one GEMM; the bias is broadcast into y first and kept inside the GEMM as a
// rank-1 term (beta = 1: y = 1 b^T + x W^T), so no second pass over y adds it.
#include "nn/kernels/Linear.h"

#include <algorithm>

#include "tensor/Blas.h"

namespace nn::kernels {

template <class T>
void linear_forward(const T* x, const T* weight, const T* bias, T* y, int64_t n, int64_t in, int64_t out) {
  if (bias) {
    for (int64_t i = 0; i < n; ++i) std::copy(bias, bias + out, y + i * out);
  }
  tensor::blas::gemm<T>(false, true, n, out, in, T(1), x, in, weight, in, bias ? T(1) : T(0), y, out);
}

template void linear_forward<float>(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t);
template void linear_forward<double>(const double*, const double*, const double*, double*, int64_t, int64_t, int64_t);

}  // namespace nn::kernels
