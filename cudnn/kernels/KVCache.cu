// KVCache.cu: see KVCache.h.
#include "cudnn/kernels/KVCache.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cudnn/kernels/Dispatch.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 256;

struct Strides4 {
  int64_t b, h, s, d;
};

Strides4 strides_of(const tensor::Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)}; }

// one thread per element of k (and the same element of v)
template <class T>
__global__ void write_kernel(const T* k, const T* v, Strides4 ks, Strides4 vs, T* ck, T* cv, Strides4 cks, Strides4 cvs,
                             const int64_t* lengths, int64_t H, int64_t S, int64_t D, int64_t maxLength, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t d = i % D, s = (i / D) % S, h = (i / (D * S)) % H, b = i / (D * S * H);
    const int64_t at = lengths[b] + s;
    if (at < 0 || at >= maxLength) continue;
    ck[b * cks.b + h * cks.h + at * cks.s + d * cks.d] = k[b * ks.b + h * ks.h + s * ks.s + d * ks.d];
    cv[b * cvs.b + h * cvs.h + at * cvs.s + d * cvs.d] = v[b * vs.b + h * vs.h + s * vs.s + d * vs.d];
  }
}

}  // namespace

void kv_cache_write(const tensor::Tensor& k, const tensor::Tensor& v, const tensor::Tensor& cacheK,
                    const tensor::Tensor& cacheV, const tensor::Tensor& lengths) {
  const int64_t n = k.numel();
  if (n == 0) return;
  const int64_t H = k.size(1), S = k.size(2), D = k.size(3), maxLength = cacheK.size(2);
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{1} << 16));
  launch_floating("kv_cache_write", k, [&]<class T, class A>(cudaStream_t stream) {
    write_kernel<T><<<blocks, kThreads, 0, stream>>>(
        k.data<T>(), v.data<T>(), strides_of(k), strides_of(v), cacheK.data<T>(), cacheV.data<T>(), strides_of(cacheK),
        strides_of(cacheV), lengths.data<int64_t>(), H, S, D, maxLength, n);
  });
}

}  // namespace cudnn::kernels
