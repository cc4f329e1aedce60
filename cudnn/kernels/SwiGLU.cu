// SwiGLU.cu: see SwiGLU.h. Grid-stride element loops; the operands are contiguous buffers of the
// module's (its projections' outputs and gradients).
#include "cudnn/kernels/SwiGLU.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cudnn/kernels/Dispatch.h"
#include "nn/kernels/SwiGLU.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

template <class T, class A>
__global__ void gate_forward_kernel(const T* a, const T* b, T* h, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    h[i] = T(nn::kernels::gate_silu(static_cast<A>(a[i])) * static_cast<A>(b[i]));
  }
}

template <class T, class A>
__global__ void gate_backward_kernel(const T* a, const T* b, const T* dh, T* da, T* db, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    A ga, gb;
    nn::kernels::gate_backward(static_cast<A>(a[i]), static_cast<A>(b[i]), static_cast<A>(dh[i]), ga, gb);
    da[i] = T(ga);
    db[i] = T(gb);
  }
}

}  // namespace

void swiglu_gate_forward(const tensor::Tensor& a, const tensor::Tensor& b, const tensor::Tensor& h) {
  const int64_t n = a.numel();
  if (n == 0) return;
  launch_floating("cudnn::kernels::swiglu_gate_forward", a, [&]<class T, class A>(cudaStream_t stream) {
    gate_forward_kernel<T, A><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()), static_cast<T*>(h.raw_data()), n);
  });
}

void swiglu_gate_backward(const tensor::Tensor& a, const tensor::Tensor& b, const tensor::Tensor& dh,
                          const tensor::Tensor& da, const tensor::Tensor& db) {
  const int64_t n = a.numel();
  if (n == 0) return;
  launch_floating("cudnn::kernels::swiglu_gate_backward", a, [&]<class T, class A>(cudaStream_t stream) {
    gate_backward_kernel<T, A><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()), static_cast<const T*>(dh.raw_data()),
        static_cast<T*>(da.raw_data()), static_cast<T*>(db.raw_data()), n);
  });
}

}  // namespace cudnn::kernels
