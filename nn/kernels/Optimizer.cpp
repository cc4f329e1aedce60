// kernels/Optimizer.cpp
#include "nn/kernels/Optimizer.h"

#include <cmath>

#include "nn/kernels/Parallel.h"

namespace nn::kernels {

template <class T>
void adam_step(T* p, const T* g, T* m, T* v, int64_t n, const AdamStep& a) {
  // the tensor ops' scalars, converted to T as they are there, and their order of operations:
  // the GPU runs those tensor ops, and CPU and GPU steps agree bit for bit
  const T wd = static_cast<T>(a.weightDecay), b1 = static_cast<T>(a.beta1), b2 = static_cast<T>(a.beta2);
  const T c1 = static_cast<T>(1 - a.beta1), c2 = static_cast<T>(1 - a.beta2);
  const T inv_rs2 = static_cast<T>(1.0 / std::sqrt(a.bias2)), eps = static_cast<T>(a.eps);
  const T step = static_cast<T>(-a.lr / a.bias1);
  const bool decay = a.weightDecay != 0 && !a.decoupled, shrink = a.weightDecay != 0 && a.decoupled;
  const T keep = static_cast<T>(1 - a.lr * a.weightDecay);  // AdamW's p.mul_(1 - lr * weightDecay)
#pragma omp parallel for simd schedule(static) if (n >= kMinThreadWork && !in_parallel())
  for (int64_t i = 0; i < n; ++i) {
    const T pi = shrink ? p[i] * keep : p[i];
    const T gi = decay ? g[i] + wd * pi : g[i];
    const T mi = m[i] * b1 + c1 * gi;
    const T vi = v[i] * b2 + c2 * (gi * gi);  // addcmul's order: value * (a * b)
    m[i] = mi;
    v[i] = vi;
    // Tensor::div_(s) multiplies by 1/s: so does this, for the same bits
    p[i] = pi + step * (mi / (std::sqrt(vi) * inv_rs2 + eps));
  }
}

template void adam_step<float>(float*, const float*, float*, float*, int64_t, const AdamStep&);
template void adam_step<double>(double*, const double*, double*, double*, int64_t, const AdamStep&);

}  // namespace nn::kernels
