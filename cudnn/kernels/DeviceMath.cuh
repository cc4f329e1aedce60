// DeviceMath.cuh: the device math the cudnn backend's kernels share: exp, log, erf and tanh
// in the accumulation type (float for float32 and the 16-bit types, double for float64), a
// NaN-keeping max, a block-wide reduction, and the online log-sum-exp of a row read once
// (Note [Online log-sum-exp]). Include only from .cu files.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace cudnn::kernels {

__device__ inline float exp_of(float v) { return expf(v); }
__device__ inline double exp_of(double v) { return exp(v); }
__device__ inline float log_of(float v) { return logf(v); }
__device__ inline double log_of(double v) { return log(v); }
__device__ inline float erf_of(float v) { return erff(v); }
__device__ inline double erf_of(double v) { return erf(v); }
__device__ inline float tanh_of(float v) { return tanhf(v); }
__device__ inline double tanh_of(double v) { return tanh(v); }

// The larger of a and b, NaN when either is: a NaN score makes its softmax row NaN.
template <class A>
__device__ inline A nan_max(A a, A b) {
  return (b > a || b != b) && a == a ? b : a;
}

// op(v) over the block (blockDim.x a multiple of 32, at most 1024) in a fixed order, returned
// to every thread; `identity` leaves a value unchanged. `shared` holds 32 values and may be
// reused at once by the next call.
template <class A, class Op>
__device__ A warp_block_reduce(A v, Op op, A identity, A* shared) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // the previous call's readers of shared[0] are done
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? shared[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

// Note [Online log-sum-exp]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// log(sum_c exp(x_c)) of a row read once: m is the largest value seen and s = sum exp(x - m)
// over the values seen, rescaled by exp(m_old - m_new) when m grows; partial states merge the
// same way. A log-softmax is then (x - m) - log(s), the two-pass formula (cuDNN's
// CUDNN_SOFTMAX_LOG) up to rounding; x - (m + log(s)) would lose x - m's exactness in float
// when |m| is large. log_sum() is NaN exactly where that formula (and nn's log_softmax_classes)
// gives a NaN row: a NaN anywhere in the row, a +Inf (Inf - Inf) or a row all -Inf
// (-Inf - -Inf), that is whenever m ends not finite. Values of -Inf add exp(-Inf - m) = 0 and
// are skipped, so that -Inf - -Inf never reaches s while m may still become finite.
template <class A>
struct OnlineLse {
  A m = -INFINITY;  // NaN once a NaN was seen (no comparison with it is true after)
  A s = 0;

  __device__ void add(A x) {
    if (x > m) {
      s = s * exp_of(m - x) + A(1);  // m = -Inf before the first value: s is 0, exp(-Inf) 0
      m = x;
    } else if (x > A(-INFINITY)) {
      s += exp_of(x - m);
    } else if (x != x) {
      m = x;
    }
  }

  __device__ void merge(A om, A os) {
    if (m != m || om != om) {
      m = m != m ? m : om;
      return;
    }
    const A top = om > m ? om : m;
    if (top == A(-INFINITY)) return;  // both empty
    s = (m == A(-INFINITY) ? A(0) : s * exp_of(m - top)) + (om == A(-INFINITY) ? A(0) : os * exp_of(om - top));
    m = top;
  }

  // log(s), or NaN for a row whose log-softmax is NaN throughout.
  __device__ A log_sum() const { return isfinite(m) ? log_of(s) : A(NAN); }
};

// The block's merged state, returned to every thread (blockDim.x a multiple of 32, at most
// 1024). Fixed order: the same bits on every run. `shared` holds 64 values.
template <class A>
__device__ OnlineLse<A> block_merge(OnlineLse<A> st, A* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const A om = __shfl_down_sync(0xffffffffu, st.m, offset), os = __shfl_down_sync(0xffffffffu, st.s, offset);
    st.merge(om, os);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  if (lane == 0) {
    shared[warp] = st.m;
    shared[32 + warp] = st.s;
  }
  __syncthreads();
  if (warp == 0) {
    st = OnlineLse<A>{};  // lanes past the last warp merge the empty state
    if (lane < warps) st = OnlineLse<A>{shared[lane], shared[32 + lane]};
    for (int offset = 16; offset > 0; offset /= 2) {
      const A om = __shfl_down_sync(0xffffffffu, st.m, offset), os = __shfl_down_sync(0xffffffffu, st.s, offset);
      st.merge(om, os);
    }
    if (lane == 0) {
      shared[0] = st.m;
      shared[32] = st.s;
    }
  }
  __syncthreads();
  return OnlineLse<A>{shared[0], shared[32]};
}

}  // namespace cudnn::kernels
