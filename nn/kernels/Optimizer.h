// kernels/Optimizer.h: optimizer updates fused into one pass per parameter, for contiguous CPU
// tensors: parameter, gradient and state are read and written once, with no temporaries,
// where the tensor-op form (nn::Adam's, which also runs on CUDA tensors) makes a pass per op
// and a new denominator tensor per step. Same operations in the same order, in T.
#pragma once

#include <cstdint>

namespace nn::kernels {

struct AdamStep {
  double lr, beta1, beta2, eps, weightDecay;
  double bias1, bias2;     // 1 - beta1^t, 1 - beta2^t
  bool decoupled = false;  // AdamW: p *= 1 - lr * weightDecay in place of the L2 term
};

// g' = g + weightDecay * p (AdamW: g' = g and p *= 1 - lr * weightDecay first); m = beta1 m + (1 - beta1) g'; v = beta2
// v + (1 - beta2) g'^2; p -= lr / bias1 * m / (sqrt(v) / sqrt(bias2) + eps). All four arrays hold n elements.
template <class T>
void adam_step(T* p, const T* g, T* m, T* v, int64_t n, const AdamStep& a);

}  // namespace nn::kernels
