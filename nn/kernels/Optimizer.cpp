// kernels/Optimizer.cpp
#include "nn/kernels/Optimizer.h"

#include <cmath>

#include "nn/kernels/Parallel.h"

namespace nn::kernels {

template <class T>
void adam_step(T* p, const T* g, T* m, T* v, int64_t n, const AdamStep& a) {
  // the tensor ops' scalars, converted to T as they are there
  const T wd = static_cast<T>(a.weightDecay), b1 = static_cast<T>(a.beta1), b2 = static_cast<T>(a.beta2);
  const T c1 = static_cast<T>(1 - a.beta1), c2 = static_cast<T>(1 - a.beta2);
  const T rs2 = static_cast<T>(std::sqrt(a.bias2)), eps = static_cast<T>(a.eps);
  const T step = static_cast<T>(-a.lr / a.bias1);
  const bool decay = a.weightDecay != 0;
#pragma omp parallel for simd schedule(static) if (n >= kMinThreadWork && !in_parallel())
  for (int64_t i = 0; i < n; ++i) {
    const T gi = decay ? g[i] + wd * p[i] : g[i];
    const T mi = m[i] * b1 + c1 * gi;
    const T vi = v[i] * b2 + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] + step * (mi / (std::sqrt(vi) / rs2 + eps));
  }
}

template void adam_step<float>(float*, const float*, float*, float*, int64_t, const AdamStep&);
template void adam_step<double>(double*, const double*, double*, double*, int64_t, const AdamStep&);

}  // namespace nn::kernels
