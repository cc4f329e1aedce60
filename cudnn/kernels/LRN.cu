// LRN.cu
#include "cudnn/kernels/Dispatch.h"
#include "cudnn/kernels/LRN.h"

namespace cudnn::kernels {

// Note [LRN backward]
// cuDNN's cross-channel LRN backward (9.14) lets a NaN in gradOutput reach channels whose
// windows do not hold it: with size 3, a NaN at channel 0 made channel 2's gradient NaN, where
// nn's sum over the window is finite (tests/cudnn/test_BadInput.cpp, NaN and Inf in
// gradOutput). The backward is therefore this kernel, nn's formula term by term: one thread an
// element, the window's scales recomputed from x (size <= 16 channels each), accumulated in
// float (double for float64) and rounded once.
namespace {
template <class T, class A>
__device__ A scale_at(const T* xp, int64_t j, int64_t C, int64_t HW, int before, int after, A a, A k) {
  A s = 0;
  const int64_t lo = j - before > 0 ? j - before : 0, hi = j + after < C - 1 ? j + after : C - 1;
  for (int64_t i = lo; i <= hi; ++i) {
    const A v = static_cast<A>(xp[i * HW]);
    s += v * v;
  }
  return k + a * s;
}

template <class T, class A>
__global__ void lrn_backward_kernel(const T* x, const T* dy, T* dx, int64_t N, int64_t C, int64_t HW, int size,
                                    A alpha, A beta, A k) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= N * C * HW) return;
  const int64_t p = e % HW, c = e / HW % C, n = e / (C * HW);
  const T* xp = x + n * C * HW + p;  // channel 0 of this sample and position
  const T* gp = dy + n * C * HW + p;
  const int before = (size - 1) / 2, after = size / 2;
  const A a = alpha / static_cast<A>(size), coef = 2 * alpha * beta / static_cast<A>(size);
  const A sc = scale_at<T, A>(xp, c, C, HW, before, after, a, k);
  A g = static_cast<A>(gp[c * HW]) * pow(sc, -beta);
  const A xc = static_cast<A>(xp[c * HW]);
  const int64_t lo = c - after > 0 ? c - after : 0, hi = c + before < C - 1 ? c + before : C - 1;
  for (int64_t j = lo; j <= hi; ++j) {
    const A sj = scale_at<T, A>(xp, j, C, HW, before, after, a, k);
    const A r = static_cast<A>(gp[j * HW]) * pow(sj, -beta) * static_cast<A>(xp[j * HW]) / sj;
    g -= coef * xc * r;
  }
  dx[e] = static_cast<T>(g);
}
}  // namespace

void lrn_backward(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& dx, int size, double alpha,
                  double beta, double k) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.numel() / std::max<int64_t>(N * C, 1), total = x.numel();
  if (total == 0) return;
  launch_floating("cudnn::kernels::lrn_backward", x, [&]<class T, class A>(cudaStream_t stream) {
    constexpr int threads = 256;
    const auto blocks = static_cast<unsigned>((total + threads - 1) / threads);
    lrn_backward_kernel<T, A><<<blocks, threads, 0, stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(dy.raw_data()), static_cast<T*>(dx.raw_data()), N,
        C, HW, size, static_cast<A>(alpha), static_cast<A>(beta), static_cast<A>(k));
  });
}

}  // namespace cudnn::kernels
