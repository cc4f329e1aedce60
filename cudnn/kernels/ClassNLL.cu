// ClassNLL.cu
#include "cudnn/kernels/ClassNLL.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/BlockFold.cuh"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 512;
constexpr long long kNoBad = INT64_MAX;

template <class T>
__device__ inline double widen(T v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return static_cast<double>(static_cast<float>(v));
}

// One block. out[0] = loss sum, out[1] = weight sum, out[2] = first bad flat index (or -1).
// logp may be null (the weight sum alone, for the normalised backward).
template <class T>
__global__ void nll_sums_kernel(const T* logp, const int64_t* target, const T* weights, int64_t n, int64_t classes,
                                int64_t inner, int64_t ignore, double* out) {
  __shared__ double loss_s[kThreads], weight_s[kThreads];
  __shared__ long long bad_s[kThreads];
  double loss = 0, weight = 0;
  long long bad = kNoBad;
  const int64_t total = n * inner;
  for (int64_t i = threadIdx.x; i < total; i += kThreads) {
    const int64_t t = target[i];
    if (t == ignore) continue;
    if (t < 0 || t >= classes) {
      bad = min(bad, static_cast<long long>(i));  // i grows: the first is this thread's smallest
      continue;
    }
    const double w = weights ? widen(weights[t]) : 1.0;
    if (logp) {
      const int64_t sample = i / inner, pos = i % inner;
      loss -= w * widen(logp[(sample * classes + t) * inner + pos]);
    }
    weight += w;
  }
  loss_s[threadIdx.x] = loss;
  weight_s[threadIdx.x] = weight;
  bad_s[threadIdx.x] = bad;
  tensor::cuda::block_fold<kThreads>([&](unsigned i, unsigned j) {
    loss_s[i] += loss_s[j];
    weight_s[i] += weight_s[j];
    bad_s[i] = min(bad_s[i], bad_s[j]);
  });
  if (threadIdx.x == 0) {
    out[0] = loss_s[0];
    out[1] = weight_s[0];
    out[2] = bad_s[0] == kNoBad ? -1.0 : static_cast<double>(bad_s[0]);
  }
}

// dlogp[n, c, i] = -w[t] * scale / norm where c == t (a counted target), 0 elsewhere;
// norm = sums[1] under size_average when sums is given and that is positive, else 1.
template <class T>
__global__ void nll_backward_kernel(const int64_t* target, const T* weights, int64_t n, int64_t classes, int64_t inner,
                                    int64_t ignore, double scale, const double* sums, bool size_average, T* dlogp) {
  if (sums && size_average && sums[1] > 0) scale *= 1.0 / sums[1];
  const int64_t total = n * classes * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pos = i % inner;
    const int64_t c = (i / inner) % classes;
    const int64_t sample = i / (inner * classes);
    const int64_t t = target[sample * inner + pos];
    double g = 0;
    if (t == c && t != ignore) g = -(weights ? widen(weights[t]) : 1.0) * scale;
    if constexpr (sizeof(T) == 8)
      dlogp[i] = g;
    else
      dlogp[i] = T(static_cast<float>(g));
  }
}

// Cross entropy's gradient for [N x C] log-probabilities, one block per sample (row i):
// dx[i, c] = dlogp[i, c] - exp(logp[i, c]) * sum_c dlogp[i, c], the log-softmax backward of
// the NLL gradient dlogp (row i: -w[t] * scale / norm at its target t, 0 elsewhere, as
// nll_backward_kernel writes it, rounded to L), in L's precision, written in dx's type D.
template <class L, class D>
__global__ void cross_entropy_backward_kernel(const L* logp, const int64_t* target, const L* weights, int64_t classes,
                                              int64_t ignore, const double* sums, bool size_average, D* dx) {
  double scale = 1.0;
  if (sums && size_average && sums[1] > 0) scale = 1.0 / sums[1];
  const int64_t row = blockIdx.x;
  const int64_t t = target[row];
  double g = 0;
  if (t != ignore && t >= 0 && t < classes) g = -(weights ? widen(weights[t]) : 1.0) * scale;
  const L* in = logp + row * classes;
  D* out = dx + row * classes;
  if constexpr (sizeof(L) == 8) {
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const double v = (c == t ? g : 0.0) - exp(in[c]) * g;
      out[c] = static_cast<D>(v);
    }
  } else {
    const float gf = static_cast<float>(g);
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const float v = (c == t ? gf : 0.f) - expf(static_cast<float>(in[c])) * gf;
      out[c] = D(v);
    }
  }
}

template <class S>
__global__ void class_indices_kernel(const S* target, int64_t n, int64_t* indices) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_integral_v<S>) {
      indices[i] = static_cast<int64_t>(target[i]);
    } else {
      const double v = widen(target[i]);
      const bool integral = isfinite(v) && v == floor(v) && fabs(v) < 9.0e15;
      indices[i] = integral ? static_cast<int64_t>(v) : kNotAnIndex;
    }
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

cudaStream_t stream_of(const tensor::Tensor& t) {
  return static_cast<cudaStream_t>(tensor::cuda::stream(t.device().index));
}

int blocks_for(int64_t work) { return static_cast<int>(std::clamp<int64_t>((work + 255) / 256, 1, 65535)); }

// Launches the sums kernel into `sums` (3 doubles on logp's or dlogp's device).
void launch_sums(const tensor::Tensor* logp, const tensor::Tensor& like, const tensor::Tensor& target,
                 const tensor::Tensor& weights, int64_t ignore_index, const tensor::Tensor& sums) {
  const Layout l = layout_of(like);
  dispatch_floating("cudnn criteria (NLL sums)", like, [&](auto tag) {
    using T = decltype(tag);
    nll_sums_kernel<T><<<1, kThreads, 0, stream_of(like)>>>(
        logp ? static_cast<const T*>(logp->raw_data()) : nullptr, target.data<int64_t>(),
        weights.defined() ? static_cast<const T*>(weights.raw_data()) : nullptr, l.n, l.classes, l.inner, ignore_index,
        sums.data<double>());
    CUDA_CHECK_LAUNCH("nll_sums");
  });
}

void launch_backward(const tensor::Tensor& target, const tensor::Tensor& weights, int64_t ignore_index, double scale,
                     const double* sums, bool size_average, const tensor::Tensor& dlogp) {
  const Layout l = layout_of(dlogp);
  dispatch_floating("cudnn criteria (NLL backward)", dlogp, [&](auto tag) {
    using T = decltype(tag);
    nll_backward_kernel<T><<<blocks_for(dlogp.numel()), 256, 0, stream_of(dlogp)>>>(
        target.data<int64_t>(), weights.defined() ? static_cast<const T*>(weights.raw_data()) : nullptr, l.n, l.classes,
        l.inner, ignore_index, scale, sums, size_average, static_cast<T*>(dlogp.raw_data()));
    CUDA_CHECK_LAUNCH("nll_backward");
  });
}

}  // namespace

NLLSums nll_sums(const tensor::Tensor& logp, const tensor::Tensor& target, const tensor::Tensor& weights,
                 int64_t ignore_index) {
  tensor::cuda::DeviceGuard guard(logp.device().index);
  const tensor::Tensor sums = tensor::empty({3}, tensor::DType::Float64, logp.device());
  launch_sums(&logp, logp, target, weights, ignore_index, sums);
  const std::vector<double> host = sums.to_vector<double>();  // the one host read
  return NLLSums{host[0], host[1], static_cast<int64_t>(host[2])};
}

NLLSums nll_forward(const tensor::Tensor& logp, const tensor::Tensor& target, const tensor::Tensor& weights,
                    int64_t ignore_index, const std::string& where) {
  const NLLSums sums = nll_sums(logp, target, weights, ignore_index);
  if (sums.first_bad >= 0) {
    const int64_t value = static_cast<int64_t>(target.reshape({-1}).get({sums.first_bad}));
    throw tensor::Error(where + "target " + std::to_string(value) + " at position " + std::to_string(sums.first_bad) +
                        " (flattened) is out of range [0, " + std::to_string(logp.size(1)) + ")");
  }
  return sums;
}

void nll_backward(const tensor::Tensor& target, const tensor::Tensor& weights, int64_t ignore_index, double scale,
                  const tensor::Tensor& dlogp) {
  if (dlogp.numel() == 0) return;
  tensor::cuda::DeviceGuard guard(dlogp.device().index);
  launch_backward(target, weights, ignore_index, scale, nullptr, false, dlogp);
}

void nll_backward_normalized(const tensor::Tensor& target, const tensor::Tensor& weights, int64_t ignore_index,
                             bool size_average, const tensor::Tensor& dlogp) {
  if (dlogp.numel() == 0) return;
  tensor::cuda::DeviceGuard guard(dlogp.device().index);
  // freed at the end of this call but still in use by the queued kernels: safe, as every
  // kernel runs on the one stream of the device (Note [One stream per device], tensor/Cuda.h)
  const tensor::Tensor sums = tensor::empty({3}, tensor::DType::Float64, dlogp.device());
  if (size_average) launch_sums(nullptr, dlogp, target, weights, ignore_index, sums);
  launch_backward(target, weights, ignore_index, 1.0, size_average ? sums.data<double>() : nullptr, size_average,
                  dlogp);
}

bool cross_entropy_backward(const tensor::Tensor& target, const tensor::Tensor& weights, int64_t ignore_index,
                            bool size_average, const tensor::Tensor& logp, const tensor::Tensor& dx) {
  const Layout l = layout_of(logp);
  if (l.inner != 1 || !logp.is_contiguous() || !dx.is_contiguous() || dx.numel() != logp.numel() || l.n > 2147483647) {
    return false;
  }
  if (dx.numel() == 0) return true;
  tensor::cuda::DeviceGuard guard(logp.device().index);
  const tensor::Tensor sums =
      tensor::empty({3}, tensor::DType::Float64, logp.device());  // as in nll_backward_normalized
  if (size_average) launch_sums(nullptr, logp, target, weights, ignore_index, sums);
  const unsigned threads = static_cast<unsigned>(std::clamp<int64_t>((l.classes + 31) / 32 * 32, 32, 256));
  dispatch_floating("cudnn criteria (cross-entropy backward)", logp, [&](auto ltag) {
    using L = decltype(ltag);
    dispatch_floating("cudnn criteria (cross-entropy backward)", dx, [&](auto dtag) {
      using D = decltype(dtag);
      if constexpr (sizeof(L) >= sizeof(D)) {  // dx in logp's dtype or a narrower one
        cross_entropy_backward_kernel<L, D><<<static_cast<unsigned>(l.n), threads, 0, stream_of(logp)>>>(
            static_cast<const L*>(logp.raw_data()), target.data<int64_t>(),
            weights.defined() ? static_cast<const L*>(weights.raw_data()) : nullptr, l.classes, ignore_index,
            size_average ? sums.data<double>() : nullptr, size_average, static_cast<D*>(dx.raw_data()));
        CUDA_CHECK_LAUNCH("cross_entropy_backward");
      } else {
        throw tensor::Error("cudnn criteria (cross-entropy backward): dx wider than the log-probabilities");
      }
    });
  });
  return true;
}

void class_indices(const tensor::Tensor& target, const tensor::Tensor& indices) {
  const int64_t n = target.numel();
  if (n == 0) return;
  tensor::cuda::DeviceGuard guard(target.device().index);
  tensor::dispatch(target.dtype(), [&](auto tag) {
    using S = decltype(tag);
    class_indices_kernel<S><<<blocks_for(n), 256, 0, stream_of(target)>>>(static_cast<const S*>(target.raw_data()), n,
                                                                          indices.data<int64_t>());
    CUDA_CHECK_LAUNCH("class_indices");
  });
}

}  // namespace cudnn::kernels
