// AdamScalars.h: the per-step scalars of Adam's update from its step count, on the host or on
// the device (capturable Adam, nn/Adam.h: Note [Capturable Adam]).
// Note [Bias corrections on the device]: the host path computes 1 - std::pow(beta, t) in double
// (glibc's pow, correctly rounded but in rare near-halfway cases). A device cannot call glibc, and
// CUDA's pow may be off by 2 ulps, so beta^t is raised here by squaring in double-double
// arithmetic (each product exact to about 2^-104, every operation an explicitly rounded IEEE
// one, no contraction), then rounded once to double: the correctly rounded power in all but
// pathological cases, so the same double as the host's, and after the scalars' conversion to
// float the same float. The CPU test (tests/nn/test_Adam.cpp) checks it against std::pow over
// many steps and betas. Header-only so that nvcc's device code and the CPU tests share it.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define TENSOR_ADAM_HD __host__ __device__ inline
#else
#define TENSOR_ADAM_HD inline
#endif

namespace tensor::adam {

// Rounded IEEE operations, never contracted (nvcc would fuse a * b + c otherwise).
TENSOR_ADAM_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TENSOR_ADAM_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TENSOR_ADAM_HD double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
TENSOR_ADAM_HD double sqrt_rn(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
TENSOR_ADAM_HD double fma_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// hi + lo with |lo| <= ulp(hi) / 2
struct DoubleDouble {
  double hi, lo;
};

TENSOR_ADAM_HD DoubleDouble dd_mul(DoubleDouble x, DoubleDouble y) {
  const double p = mul_rn(x.hi, y.hi);
  const double e = fma_rn(x.hi, y.hi, -p);  // the exact error of p
  const double lo = add_rn(e, add_rn(mul_rn(x.hi, y.lo), mul_rn(x.lo, y.hi)));
  const double hi = add_rn(p, lo);
  return {hi, add_rn(lo, -add_rn(hi, -p))};  // fast two-sum (|p| >= |lo|)
}

// beta^t for t >= 0, rounded once to double (Note [Bias corrections on the device]).
TENSOR_ADAM_HD double pow_steps(double beta, int64_t t) {
  DoubleDouble result{1, 0}, base{beta, 0};
  while (t > 0) {
    if (t & 1) result = dd_mul(result, base);
    t >>= 1;
    if (t > 0) base = dd_mul(base, base);
  }
  return add_rn(result.hi, result.lo);
}

// What nn::Adam's step computes on the host for step count t, in double:
//   bias1 = 1 - beta1^t, bias2 = 1 - beta2^t, a = -lr / bias1, b = 1 / sqrt(bias2), and
//   keep = 1 - lr * weightDecay (AdamW's decoupled decay).
struct Scalars {
  double a, b, keep;
};
TENSOR_ADAM_HD Scalars scalars(double lr, double beta1, double beta2, double weightDecay, int64_t t) {
  const double bias1 = add_rn(1.0, -pow_steps(beta1, t)), bias2 = add_rn(1.0, -pow_steps(beta2, t));
  return {div_rn(-lr, bias1), div_rn(1.0, sqrt_rn(bias2)), add_rn(1.0, -mul_rn(lr, weightDecay))};
}

}  // namespace tensor::adam
