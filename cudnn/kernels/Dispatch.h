// Dispatch.h: tensor::dispatch for the cudnn backend's kernels, which take floating data only
// (float32, float64, float16, bfloat16). Any other dtype is an error naming the kernel.
// launch_floating adds what every launching wrapper does around its launch: the device guard,
// the device's stream (Note [One stream per device] in tensor/Cuda.h) and the launch check.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "tensor/Cuda.h"
#include "tensor/Tensor.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

// dispatch_floating(op, t, [&](auto tag) { using T = decltype(tag); ... })
template <class F>
void dispatch_floating(const char* op, const tensor::Tensor& t, F&& f) {
  tensor::dispatch(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t>) {
      throw tensor::Error(std::string(op) + ": floating data expected, got " + t.description());
    } else {
      f(tag);
    }
  });
}

// launch_floating(op, t, [&]<class T, class A>(cudaStream_t stream) { kernel<T, A><<<grid, block, 0, stream>>>(...); })
// on t's device, T the type of t's floating dtype and A the type it computes in (tensor::acc_t:
// float for the 16-bit types); a failed launch throws naming `op`.
template <class F>
void launch_floating(const char* op, const tensor::Tensor& t, F&& launch) {
  tensor::cuda::DeviceGuard guard(t.device().index);
  const auto stream = static_cast<cudaStream_t>(tensor::cuda::stream(t.device().index));
  dispatch_floating(op, t, [&](auto tag) {
    using T = decltype(tag);
    launch.template operator()<T, tensor::acc_t<T>>(stream);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) {
      tensor::cuda::detail::throw_cuda_error(status, (std::string("launch of ") + op).c_str(), __FILE__, __LINE__);
    }
  });
}

}  // namespace cudnn::kernels
