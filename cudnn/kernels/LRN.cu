// LRN.cu
#include "cudnn/kernels/Dispatch.h"
#include "cudnn/kernels/LRN.h"

#include <limits>
#include <utility>

namespace cudnn::kernels {

// Note [LRN backward]
// cuDNN's cross-channel LRN backward (9.14) lets a NaN in gradOutput reach channels whose
// windows do not hold it: with size 3, a NaN at channel 0 made channel 2's gradient NaN, where
// nn's sum over the window is finite (tests/cudnn/test_BadInput.cpp, NaN and Inf in
// gradOutput); a running window sum that subtracts the channel leaving it would do that. So the
// backward is this kernel, nn's formula term by term with every window summed afresh. One
// thread walks the channels of one (sample, position), coalesced across positions, keeping the
// last `size` values of x, of the ratio r_j = dy_j s_j^-beta x_j / s_j and of dy_j s_j^-beta in
// registers shifted each step: channel t's x is read at step t, s_j and r_j at step j + size / 2 (once the window's
// last x is in), and channel c's gradient is written at step c + size - 1 (once the ratios of
// every window holding c are in). Accumulated in float (double for float64), rounded once.
namespace {
constexpr int kMaxSize = 16;  // cuDNN's CUDNN_LRN_MAX_N, which check_lrn_arguments enforces

// s^-beta; beta = 0.75 (AlexNet's, Caffe's default) as s^-1/2 (s^-1/2)^1/2, as nn's pow_neg
template <class A>
__device__ A pow_neg(A s, A beta, bool three_quarters) {
  if (three_quarters) {
    const A r = 1 / sqrt(s);
    return r * sqrt(r);
  }
  return pow(s, -beta);
}

// SIZE is a template argument (every size cuDNN takes is instantiated), so the windows shift
// through registers: with rings indexed at run time they lived in local memory, and AlexNet's
// first LRN backward (128 x 96 x 55 x 55, float32, H200) took 0.41 ms, now 0.21 against
// cuDNN's own 0.14 (.data/lrnprobe.cu).
template <class T, class A, int SIZE>
__global__ void lrn_backward_kernel(const T* x, const T* dy, T* dx, int64_t N, int C, int64_t HW, A alpha, A beta,
                                    A k) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= N * HW) return;
  const int64_t n = e / HW, p = e % HW;
  const T* xp = x + n * C * HW + p;
  const T* gp = dy + n * C * HW + p;
  T* op = dx + n * C * HW + p;
  constexpr int before = (SIZE - 1) / 2, after = SIZE / 2;
  const A a = alpha / static_cast<A>(SIZE), coef = 2 * alpha * beta / static_cast<A>(SIZE);
  const bool tq = beta == A(0.75);
  // at step t: xs[i] = x of channel t - SIZE + 1 + i; rs[i] = ratio of channel t - after - SIZE + 1 + i;
  // sc[i] = dy s^-beta of channel t - after - before + i
  A xs[SIZE] = {}, rs[SIZE] = {}, sc[before + 1] = {};
  for (int t = 0; t < C + SIZE - 1; ++t) {
#pragma unroll
    for (int i = 0; i + 1 < SIZE; ++i) xs[i] = xs[i + 1];
    xs[SIZE - 1] = t < C ? static_cast<A>(xp[t * HW]) : A(0);
#pragma unroll
    for (int i = 0; i + 1 < SIZE; ++i) rs[i] = rs[i + 1];
#pragma unroll
    for (int i = 0; i < before; ++i) sc[i] = sc[i + 1];
    if (const int j = t - after; j >= 0 && j < C) {
      A s = 0;
#pragma unroll
      for (int i = 0; i < SIZE; ++i) {
        const int ch = t - SIZE + 1 + i;
        if (ch >= 0 && ch < C) s += xs[i] * xs[i];
      }
      s = k + a * s;
      const A g = static_cast<A>(gp[j * HW]) * pow_neg(s, beta, tq);
      sc[before] = g;
      rs[SIZE - 1] = g * xs[SIZE - 1 - after] / s;
    }
    if (const int c = t - (SIZE - 1); c >= 0 && c < C) {
      A g = sc[0];
#pragma unroll
      for (int i = 0; i < SIZE; ++i) {
        const int ch = c - after + i;
        if (ch >= 0 && ch < C) g -= coef * xs[0] * rs[i];
      }
      op[c * HW] = static_cast<T>(g);
    }
  }
}
}  // namespace

void lrn_backward(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& dx, int size, double alpha,
                  double beta, double k) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.numel() / std::max<int64_t>(N * C, 1);
  if (x.numel() == 0) return;
  if (C > std::numeric_limits<int>::max()) {
    throw tensor::Error("cudnn::kernels::lrn_backward: expected at most 2^31 - 1 channels, got " + std::to_string(C));
  }
  if (size < 1 || size > kMaxSize) {
    throw tensor::Error("cudnn::kernels::lrn_backward: expected size 1.." + std::to_string(kMaxSize) + ", got " +
                        std::to_string(size));
  }
  launch_floating("cudnn::kernels::lrn_backward", x, [&]<class T, class A>(cudaStream_t stream) {
    constexpr int threads = 128;
    const auto blocks = static_cast<unsigned>((N * HW + threads - 1) / threads);
    const auto* xd = static_cast<const T*>(x.raw_data());
    const auto* gd = static_cast<const T*>(dy.raw_data());
    auto* od = static_cast<T*>(dx.raw_data());
    const auto c = static_cast<int>(C);
    const A al = static_cast<A>(alpha), be = static_cast<A>(beta), kk = static_cast<A>(k);
    const auto launch = [&]<int SIZE>() {
      lrn_backward_kernel<T, A, SIZE><<<blocks, threads, 0, stream>>>(xd, gd, od, N, c, HW, al, be, kk);
      return true;
    };
    // size as a template argument: the first of 1 .. kMaxSize that equals it
    const auto launch_size = [&]<int... S>(std::integer_sequence<int, S...>) {
      ((size == S + 1 && launch.template operator()<S + 1>()) || ...);
    };
    launch_size(std::make_integer_sequence<int, kMaxSize>{});
  });
}

}  // namespace cudnn::kernels
