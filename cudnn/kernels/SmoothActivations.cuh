// SmoothActivations.cuh: GELU (erf), GELU's tanh form and SiLU as device functors, shared by the
// activation kernels (Activation.cu) and the few rows' product, which applies GELU in its
// epilogue (FewRowsLinear.cu): one definition, so both give the same bits.
#pragma once

#include "cudnn/kernels/DeviceMath.cuh"

namespace cudnn::kernels {

// GELU and SiLU: nn::kernels' expressions (nn/kernels/Activation.cpp) in acc_t<T>, term
// for term and in the same order, so that infinities and NaNs come out as nn's. The constants are
// nn's: 1/sqrt(2), 1/sqrt(2 pi), sqrt(2/pi) and the tanh form's cubic coefficient.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

struct GeluOp {
  template <class A>
  __device__ A operator()(A v) const {
    return v * A(0.5) * (A(1) + erf_of(v * A(kSqrtHalf)));
  }
  template <class A>
  __device__ A operator()(A v, A g) const {  // d/dx x Phi(x) = Phi(x) + x phi(x)
    const A cdf = A(0.5) * (A(1) + erf_of(v * A(kSqrtHalf)));
    const A pdf = A(kInvSqrt2Pi) * exp_of(A(-0.5) * v * v);
    return g * (cdf + v * pdf);
  }
};

struct GeluTanhOp {
  template <class A>
  __device__ A operator()(A v) const {
    const A inner = A(kSqrt2OverPi) * (v + A(kGeluCubic) * v * v * v);
    return A(0.5) * v * (A(1) + tanh_of(inner));
  }
  template <class A>
  __device__ A operator()(A v, A g) const {
    const A t = tanh_of(A(kSqrt2OverPi) * (v + A(kGeluCubic) * v * v * v));
    const A dinner = A(kSqrt2OverPi) * (A(1) + A(3 * kGeluCubic) * v * v);
    return g * (A(0.5) * (A(1) + t) + A(0.5) * v * (A(1) - t * t) * dinner);
  }
};

struct SiluOp {
  template <class A>
  __device__ A operator()(A v) const {
    return v / (A(1) + exp_of(-v));
  }
  template <class A>
  __device__ A operator()(A v, A g) const {  // s (1 + x (1 - s)), s = sigmoid(x)
    const A s = A(1) / (A(1) + exp_of(-v));
    return g * s * (A(1) + v * (A(1) - s));
  }
};

}  // namespace cudnn::kernels
