// Activation.cu
#include "cudnn/kernels/Activation.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

template <class T>
__global__ void clipped_relu_backward_kernel(const T* y, const T* dy, T* dx, int64_t n, tensor::acc_t<T> ceiling) {
  using A = tensor::acc_t<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const A o = static_cast<A>(y[i]);
    // a NaN output gets 0, as cuDNN and nn::kernels give (Note [NaN and Inf] in nn/kernels/Activation.h)
    dx[i] = o > A(0) && o < ceiling ? dy[i] : T(A(0));
  }
}

}  // namespace

void clipped_relu_backward_from_output(const tensor::Tensor& y, const tensor::Tensor& dy, const tensor::Tensor& dx,
                                       double ceiling) {
  const int64_t n = y.numel();
  if (n == 0) return;
  tensor::cuda::DeviceGuard guard(y.device().index);
  auto stream = static_cast<cudaStream_t>(tensor::cuda::stream(y.device().index));
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535));
  tensor::dispatch(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t>) {
      throw tensor::Error("clipped_relu_backward_from_output: floating data expected, got " + y.description());
    } else {
      using A = tensor::acc_t<T>;
      // the forward clamps in float (double for double data) and rounds to T: compare with that
      const A c = static_cast<A>(T(static_cast<A>(ceiling)));
      clipped_relu_backward_kernel<T><<<blocks, 256, 0, stream>>>(static_cast<const T*>(y.raw_data()),
                                                                   static_cast<const T*>(dy.raw_data()),
                                                                   static_cast<T*>(dx.raw_data()), n, c);
      CUDA_CHECK_LAUNCH("clipped_relu_backward_from_output");
    }
  });
}

}  // namespace cudnn::kernels
