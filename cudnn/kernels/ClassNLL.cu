// ClassNLL.cu
#include "cudnn/kernels/ClassNLL.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 512;

template <class T>
__device__ inline double widen(T v) {
  if constexpr (sizeof(T) == 8) return v;
  else return static_cast<double>(static_cast<float>(v));
}

// out[0] = loss sum, out[1] = weight sum, bad[0] = first bad flat index (or INT64_MAX)
template <class T>
__global__ void nll_forward_kernel(const T* logp, const int64_t* target, const T* weights, int64_t n, int64_t classes,
                                   int64_t inner, int64_t ignore, double* out, unsigned long long* bad) {
  __shared__ double loss_s[kThreads], weight_s[kThreads];
  double loss = 0, weight = 0;
  const int64_t total = n * inner;
  for (int64_t i = threadIdx.x; i < total; i += kThreads) {
    const int64_t t = target[i];
    if (t == ignore) continue;
    if (t < 0 || t >= classes) {
      atomicMin(bad, static_cast<unsigned long long>(i));
      continue;
    }
    const int64_t sample = i / inner, pos = i % inner;
    const double w = weights ? widen(weights[t]) : 1.0;
    loss -= w * widen(logp[(sample * classes + t) * inner + pos]);
    weight += w;
  }
  loss_s[threadIdx.x] = loss;
  weight_s[threadIdx.x] = weight;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      loss_s[threadIdx.x] += loss_s[threadIdx.x + stride];
      weight_s[threadIdx.x] += weight_s[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[0] = loss_s[0];
    out[1] = weight_s[0];
  }
}

template <class T>
__global__ void nll_backward_kernel(const int64_t* target, const T* weights, int64_t n, int64_t classes, int64_t inner,
                                    int64_t ignore, double scale, T* dlogp) {
  const int64_t total = n * classes * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pos = i % inner;
    const int64_t c = (i / inner) % classes;
    const int64_t sample = i / (inner * classes);
    const int64_t t = target[sample * inner + pos];
    double g = 0;
    if (t == c && t != ignore) g = -(weights ? widen(weights[t]) : 1.0) * scale;
    if constexpr (sizeof(T) == 8) dlogp[i] = g;
    else dlogp[i] = T(static_cast<float>(g));
  }
}

struct Layout {
  int64_t n, classes, inner;
};

Layout layout_of(const tensor::Tensor& logp) {
  Layout l{logp.size(0), logp.size(1), 1};
  for (int64_t d = 2; d < logp.dim(); ++d) l.inner *= logp.size(d);
  return l;
}

template <class F>
void dispatch_float(tensor::DType t, F&& f) {
  tensor::dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t>) {
      throw tensor::Error("cudnn criteria: floating input expected");
    } else {
      f(T{});
    }
  });
}

}  // namespace

NLLSums nll_forward(const tensor::Tensor& logp, const tensor::Tensor& target, const tensor::Tensor& weights,
                    int64_t ignore_index, const std::string& where) {
  const Layout l = layout_of(logp);
  tensor::cuda::DeviceGuard guard(logp.device().index);
  auto stream = static_cast<cudaStream_t>(tensor::cuda::stream(logp.device().index));
  tensor::Tensor sums = tensor::empty({2}, tensor::DType::Float64, logp.device());
  tensor::Tensor bad = tensor::full({1}, -1.0, tensor::DType::Int64, logp.device());  // all ones: the largest u64
  dispatch_float(logp.dtype(), [&](auto tag) {
    using T = decltype(tag);
    nll_forward_kernel<T><<<1, kThreads, 0, stream>>>(
        static_cast<const T*>(logp.raw_data()), target.data<int64_t>(),
        weights.defined() ? static_cast<const T*>(weights.raw_data()) : nullptr, l.n, l.classes, l.inner, ignore_index,
        sums.data<double>(), reinterpret_cast<unsigned long long*>(bad.data<int64_t>()));
    CUDA_CHECK_LAUNCH("nll_forward");
  });
  const int64_t first_bad = static_cast<int64_t>(bad.item());
  if (first_bad != -1) {
    const int64_t value = static_cast<int64_t>(target.reshape({-1}).get({first_bad}));
    throw tensor::Error(where + "target " + std::to_string(value) + " at position " + std::to_string(first_bad) +
                        " (flattened) is out of range [0, " + std::to_string(l.classes) + ")");
  }
  const std::vector<double> host = sums.to_vector<double>();
  return NLLSums{host[0], host[1]};
}

void nll_backward(const tensor::Tensor& target, const tensor::Tensor& weights, int64_t ignore_index, double scale,
                  const tensor::Tensor& dlogp) {
  const Layout l = layout_of(dlogp);
  const int64_t total = dlogp.numel();
  if (total == 0) return;
  tensor::cuda::DeviceGuard guard(dlogp.device().index);
  auto stream = static_cast<cudaStream_t>(tensor::cuda::stream(dlogp.device().index));
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 65535));
  dispatch_float(dlogp.dtype(), [&](auto tag) {
    using T = decltype(tag);
    nll_backward_kernel<T><<<blocks, 256, 0, stream>>>(
        target.data<int64_t>(), weights.defined() ? static_cast<const T*>(weights.raw_data()) : nullptr, l.n,
        l.classes, l.inner, ignore_index, scale, static_cast<T*>(dlogp.raw_data()));
    CUDA_CHECK_LAUNCH("nll_backward");
  });
}

}  // namespace cudnn::kernels
