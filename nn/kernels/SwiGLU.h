// SwiGLU.h: the gate of nn::SwiGLU, h = silu(a) * b (a = gate_proj(x), b = up_proj(x)), and its
// derivatives, one definition for both backends: the CPU loops of nn/SwiGLU.cpp and the fused
// CUDA kernel of cudnn/kernels/SwiGLU.cu call these functions, in acc_t<T> (float for float32 and
// the 16-bit types, double for float64). silu is nn's expression (nn/kernels/Activation.cpp:
// a / (1 + exp(-a)), PyTorch's), so infinities and NaNs come out as nn.SiLU's: silu(-Inf) =
// -Inf / Inf = NaN, silu(+Inf) = +Inf, and the derivative is NaN at both infinities. No CUDA
// header: nvcc sees the qualifiers only.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define NN_GATE_HD __host__ __device__ inline
#else
#define NN_GATE_HD inline
#endif

namespace nn::kernels {

template <class A>
NN_GATE_HD A gate_exp(A v) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(A) == 4) {
    return expf(v);
  } else {
    return exp(v);
  }
#else
  return std::exp(v);
#endif
}

// silu(a) = a sigmoid(a)
template <class A>
NN_GATE_HD A gate_silu(A a) {
  return a / (A(1) + gate_exp(-a));
}

// With g the gradient of h = silu(a) * b: da = g b silu'(a), silu'(a) = s (1 + a (1 - s)),
// s = sigmoid(a); db = g silu(a).
template <class A>
NN_GATE_HD void gate_backward(A a, A b, A g, A& da, A& db) {
  const A s = A(1) / (A(1) + gate_exp(-a));
  da = g * b * (s * (A(1) + a * (A(1) - s)));
  db = g * gate_silu(a);
}

}  // namespace nn::kernels
