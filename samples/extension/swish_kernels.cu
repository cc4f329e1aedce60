// swish_kernels.cu: y = x s, gx = gy (s + beta x s (1 - s)), contrib = gy x^2 s (1 - s),
// s = 1 / (1 + exp(-beta x)), written as the reference writes them so NaN and Inf come out alike.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "swish_kernels.h"

namespace ext::kernels {
namespace {

template <class T>
__device__ T sigmoid(T v) {
  return T(1) / (T(1) + exp(-v));
}

template <class T>
__global__ void forward_kernel(const T* x, const T* beta, T* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * sigmoid(*beta * x[i]);
}

template <class T>
__global__ void backward_kernel(const T* x, const T* gy, const T* beta, T* gx, T* contrib, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const T b = *beta, v = x[i], s = sigmoid(b * v);
  if (gx) gx[i] = gy[i] * (s + b * v * s * (T(1) - s));
  if (contrib) contrib[i] = gy[i] * v * v * s * (T(1) - s);
}

void check(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("ext::kernels::") + what + ": " + cudaGetErrorString(e));
}

constexpr int kThreads = 256;
unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

void swish_forward(const void* x, const void* beta, void* y, int64_t n, bool f64, void* stream) {
  if (n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  if (f64)
    forward_kernel<<<blocks(n), kThreads, 0, s>>>(static_cast<const double*>(x), static_cast<const double*>(beta),
                                                  static_cast<double*>(y), n);
  else
    forward_kernel<<<blocks(n), kThreads, 0, s>>>(static_cast<const float*>(x), static_cast<const float*>(beta),
                                                  static_cast<float*>(y), n);
  check("swish_forward");
}

void swish_backward(const void* x, const void* gy, const void* beta, void* gx, void* contrib, int64_t n, bool f64,
                    void* stream) {
  if (n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  if (f64)
    backward_kernel<<<blocks(n), kThreads, 0, s>>>(static_cast<const double*>(x), static_cast<const double*>(gy),
                                                   static_cast<const double*>(beta), static_cast<double*>(gx),
                                                   static_cast<double*>(contrib), n);
  else
    backward_kernel<<<blocks(n), kThreads, 0, s>>>(static_cast<const float*>(x), static_cast<const float*>(gy),
                                                   static_cast<const float*>(beta), static_cast<float*>(gx),
                                                   static_cast<float*>(contrib), n);
  check("swish_backward");
}

}  // namespace ext::kernels
