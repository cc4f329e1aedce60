// Attention.cu: see Attention.h. One block per row of the score matrix; the rows are long
// (Sk keys) and few per head, so a block strides over its row with coalesced reads and
// reduces with warp shuffles. The max is NaN-propagating (a NaN score makes the row NaN, as the
// reference's arithmetic does: Note [NaN and Inf]).
#include "cudnn/kernels/Attention.h"

#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "cudnn/kernels/DeviceMath.cuh"
#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 256;

// Block-wide max (NaN-keeping) and sum of one value per thread (warp_block_reduce); every
// thread gets the result.
template <class A>
__device__ A block_max(A v, A* shared) {
  return warp_block_reduce(
      v, [](A a, A b) { return nan_max(a, b); }, A(-INFINITY), shared);
}
template <class A>
__device__ A block_sum(A v, A* shared) {
  return warp_block_reduce(
      v, [](A a, A b) { return a + b; }, A(0), shared);
}

// The keys row `r` may attend: [0, limit).
__device__ inline int64_t key_limit(int64_t r, const AttentionRows& g) {
  const int64_t b = r / (g.heads * g.sq), i = r % g.sq;
  int64_t limit = g.keyLengths ? g.keyLengths[b] : g.sk;
  if (g.causal && i + 1 < limit) limit = i + 1;
  return limit;
}

// Row r's bias (B typed), or null.
template <class B>
__device__ inline const B* bias_row(int64_t r, const AttentionRows& g) {
  if (!g.bias) return nullptr;
  const int64_t b = r / (g.heads * g.sq), h = (r / g.sq) % g.heads, i = r % g.sq;
  const int64_t bb = g.biasBatch == 1 ? 0 : b, hh = g.biasHeads == 1 ? 0 : h;
  return static_cast<const B*>(g.bias) + ((bb * g.biasHeads + hh) * g.sq + i) * g.sk;
}

// The masked, scaled score of key j < limit: -inf where the bias is -inf, whatever the score.
template <class A>
__device__ inline A masked_score(A scale, A s, const A* bias, int64_t j) {
  if (!bias) return scale * s;
  const A b = bias[j];
  return b == A(-INFINITY) ? b : scale * s + b;
}

template <class T, class A>
__global__ void softmax_forward_kernel(const A* scores, AttentionRows g, const T* mask, T* probs, A* lse) {
  __shared__ A shared[32];
  const int64_t r = blockIdx.x;
  const int64_t limit = key_limit(r, g);
  const A scale = static_cast<A>(g.scale);
  const A* row = scores + r * g.sk;
  const A* bias = bias_row<A>(r, g);
  A m = -INFINITY;
  for (int64_t j = threadIdx.x; j < limit; j += kThreads) m = nan_max(m, masked_score(scale, row[j], bias, j));
  m = block_max(m, shared);
  const bool dead = m == A(-INFINITY);  // no key left: probabilities 0, logsumexp -inf
  A sum = 0;
  if (!dead) {
    for (int64_t j = threadIdx.x; j < limit; j += kThreads) sum += exp_of(masked_score(scale, row[j], bias, j) - m);
  }
  sum = block_sum(sum, shared);
  const A inv = A(1) / sum;
  for (int64_t j = threadIdx.x; j < g.sk; j += kThreads) {
    A p = j < limit && !dead ? exp_of(masked_score(scale, row[j], bias, j) - m) * inv : A(0);
    if (mask) p *= static_cast<A>(mask[r * g.sk + j]);
    probs[r * g.sk + j] = T(p);
  }
  if (threadIdx.x == 0) lse[r] = dead ? m : m + log_of(sum);
}

template <class T, class A>
__global__ void probs_kernel(const A* scores, AttentionRows g, const A* lse, const T* mask, T* probs) {
  const int64_t r = blockIdx.x;
  const int64_t limit = lse[r] == A(-INFINITY) ? 0 : key_limit(r, g);
  const A scale = static_cast<A>(g.scale), l = lse[r];
  const A* bias = bias_row<A>(r, g);
  for (int64_t j = threadIdx.x; j < g.sk; j += kThreads) {
    A p = j < limit ? exp_of(masked_score(scale, scores[r * g.sk + j], bias, j) - l) : A(0);
    if (mask) p *= static_cast<A>(mask[r * g.sk + j]);
    probs[r * g.sk + j] = T(p);
  }
}

template <class T, class A>
__global__ void row_dot_kernel(const T* dout, const T* out, int64_t d, A* rowDot) {
  __shared__ A shared[32];
  const int64_t r = blockIdx.x;
  A s = 0;
  for (int64_t j = threadIdx.x; j < d; j += kThreads) {
    s += static_cast<A>(dout[r * d + j]) * static_cast<A>(out[r * d + j]);
  }
  s = block_sum(s, shared);
  if (threadIdx.x == 0) rowDot[r] = s;
}

template <class T, class A>
__global__ void softmax_backward_kernel(const A* scores, const A* gradProbs, AttentionRows g, const A* lse,
                                        const A* rowDot, const T* mask, T* gradScores) {
  const int64_t r = blockIdx.x;
  const int64_t limit = lse[r] == A(-INFINITY) ? 0 : key_limit(r, g);
  const A scale = static_cast<A>(g.scale), l = lse[r], dsum = rowDot[r];
  const A* bias = bias_row<A>(r, g);
  for (int64_t j = threadIdx.x; j < g.sk; j += kThreads) {
    A ds = 0;
    if (j < limit) {
      const A p = exp_of(masked_score(scale, scores[r * g.sk + j], bias, j) - l);
      A dp = gradProbs[r * g.sk + j];
      if (mask) dp *= static_cast<A>(mask[r * g.sk + j]);
      ds = scale * p * (dp - dsum);
    }
    gradScores[r * g.sk + j] = T(ds);
  }
}

// One thread per bias element; M the mask's element type, O the bias's.
template <class M, class O>
__global__ void mask_to_bias_kernel(const M* mask, int64_t s0, int64_t s1, int64_t s2, int64_t s3, int64_t n1,
                                    int64_t n2, int64_t n3, O* bias, int64_t n) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= n) return;
  const int64_t j = e % n3, i = (e / n3) % n2, h = (e / (n3 * n2)) % n1, b = e / (n3 * n2 * n1);
  const M m = mask[b * s0 + h * s1 + i * s2 + j * s3];
  using A = tensor::acc_t<O>;
  A v;
  if constexpr (std::is_same_v<M, uint8_t>) {
    v = m ? A(0) : A(-INFINITY);
  } else {
    v = static_cast<A>(static_cast<tensor::acc_t<M>>(m));
    if constexpr (std::is_same_v<O, tensor::Half>) {
      if (isfinite(v)) v = fminf(fmaxf(v, -65504.0f), 65504.0f);  // a finite bias stays finite
    } else if constexpr (std::is_same_v<O, tensor::BFloat16>) {
      if (isfinite(v)) v = fminf(fmaxf(v, -3.3895314e38f), 3.3895314e38f);
    }
  }
  bias[e] = O(v);
}

template <class T>
__global__ void dead_rows_kernel(AttentionRows g, T* out, int64_t o0, int64_t o1, int64_t o2, int64_t dv, float* lse) {
  __shared__ int shared[32];
  const int64_t r = blockIdx.x;
  const int64_t limit = key_limit(r, g);
  const T* bias = bias_row<T>(r, g);
  int alive = 0;
  for (int64_t j = threadIdx.x; j < limit && !alive; j += kThreads) {
    alive = static_cast<float>(bias[j]) != -INFINITY;
  }
  alive = warp_block_reduce(
      alive, [](int a, int b) { return a | b; }, 0, shared);
  if (alive) return;
  const int64_t b = r / (g.heads * g.sq), h = (r / g.sq) % g.heads, i = r % g.sq;
  T* row = out + b * o0 + h * o1 + i * o2;
  for (int64_t j = threadIdx.x; j < dv; j += kThreads) row[j] = T(0.0f);
  if (threadIdx.x == 0) lse[r] = -INFINITY;
}

__global__ void backward_stats_kernel(const float* lse, float* stats, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) stats[i] = lse[i] == -INFINITY ? INFINITY : lse[i];
}

__global__ void lengths_kernel(const int64_t* in, int32_t* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<int32_t>(in[i]);
}

// The accumulation type's tensor, checked: the fallback hands these kernels A-typed buffers.
template <class A>
const A* acc_ptr(const tensor::Tensor& t, const char* what) {
  if (t.dtype() != tensor::dtype_v<A> || !t.is_contiguous()) {
    throw tensor::Error(std::string("cudnn::kernels::attention: expected a contiguous ") +
                        tensor::name(tensor::dtype_v<A>) + " " + what + ", got " + t.description());
  }
  return static_cast<const A*>(t.raw_data());
}

template <class T>
const T* mask_ptr(const tensor::Tensor& mask) {
  return mask.defined() ? static_cast<const T*>(mask.raw_data()) : nullptr;
}

unsigned rows_of(const AttentionRows& g) { return static_cast<unsigned>(g.batch * g.heads * g.sq); }

}  // namespace

void attention_softmax_forward(const tensor::Tensor& scores, const AttentionRows& g, const tensor::Tensor& mask,
                               const tensor::Tensor& probs, const tensor::Tensor& logsumexp) {
  if (rows_of(g) == 0) return;
  launch_floating("cudnn::kernels::attention_softmax_forward", probs, [&]<class T, class A>(cudaStream_t stream) {
    softmax_forward_kernel<T, A><<<rows_of(g), kThreads, 0, stream>>>(
        acc_ptr<A>(scores, "score matrix"), g, mask_ptr<T>(mask), static_cast<T*>(probs.raw_data()),
        const_cast<A*>(acc_ptr<A>(logsumexp, "logsumexp")));
  });
}

void attention_probs(const tensor::Tensor& scores, const AttentionRows& g, const tensor::Tensor& logsumexp,
                     const tensor::Tensor& mask, const tensor::Tensor& probs) {
  if (rows_of(g) == 0) return;
  launch_floating("cudnn::kernels::attention_probs", probs, [&]<class T, class A>(cudaStream_t stream) {
    probs_kernel<T, A><<<rows_of(g), kThreads, 0, stream>>>(acc_ptr<A>(scores, "score matrix"), g,
                                                            acc_ptr<A>(logsumexp, "logsumexp"), mask_ptr<T>(mask),
                                                            static_cast<T*>(probs.raw_data()));
  });
}

void attention_row_dot(const tensor::Tensor& gradOut, const tensor::Tensor& out, const tensor::Tensor& rowDot) {
  const int64_t rows = rowDot.numel();
  if (rows == 0) return;
  launch_floating("cudnn::kernels::attention_row_dot", out, [&]<class T, class A>(cudaStream_t stream) {
    row_dot_kernel<T, A><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(gradOut.raw_data()), static_cast<const T*>(out.raw_data()), out.numel() / rows,
        const_cast<A*>(acc_ptr<A>(rowDot, "row sums")));
  });
}

void attention_softmax_backward(const tensor::Tensor& scores, const tensor::Tensor& gradProbs, const AttentionRows& g,
                                const tensor::Tensor& logsumexp, const tensor::Tensor& rowDot,
                                const tensor::Tensor& mask, const tensor::Tensor& gradScores) {
  if (rows_of(g) == 0) return;
  launch_floating("cudnn::kernels::attention_softmax_backward", gradScores, [&]<class T, class A>(cudaStream_t stream) {
    softmax_backward_kernel<T, A><<<rows_of(g), kThreads, 0, stream>>>(
        acc_ptr<A>(scores, "score matrix"), acc_ptr<A>(gradProbs, "probability gradient"), g,
        acc_ptr<A>(logsumexp, "logsumexp"), acc_ptr<A>(rowDot, "row sums"), mask_ptr<T>(mask),
        static_cast<T*>(gradScores.raw_data()));
  });
}

void attention_mask_to_bias(const tensor::Tensor& mask, const tensor::Tensor& bias) {
  const int64_t n = bias.numel();
  if (n == 0) return;
  if (mask.dim() != 4 || mask.sizes() != bias.sizes() || !bias.is_contiguous()) {
    throw tensor::Error(
        "cudnn::kernels::attention_mask_to_bias: expected a 4-d mask view of a contiguous bias's "
        "shape, got mask " +
        mask.description() + ", bias " + bias.description());
  }
  launch_floating("cudnn::kernels::attention_mask_to_bias", bias, [&]<class O, class A>(cudaStream_t stream) {
    (void)sizeof(A);
    tensor::dispatch(mask.dtype(), [&](auto tag) {
      using M = decltype(tag);
      if constexpr (std::is_same_v<M, int64_t>) {
        throw tensor::Error("cudnn::kernels::attention_mask_to_bias: expected a uint8 or floating mask, got " +
                            mask.description());
      } else {
        mask_to_bias_kernel<M, O><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
            static_cast<const M*>(mask.raw_data()), mask.stride(0), mask.stride(1), mask.stride(2), mask.stride(3),
            mask.size(1), mask.size(2), mask.size(3), static_cast<O*>(bias.raw_data()), n);
      }
    });
  });
}

void attention_dead_rows(const AttentionRows& g, const tensor::Tensor& out, const tensor::Tensor& logsumexp) {
  if (rows_of(g) == 0 || !g.bias) return;
  launch_floating("cudnn::kernels::attention_dead_rows", out, [&]<class T, class A>(cudaStream_t stream) {
    (void)sizeof(A);
    dead_rows_kernel<T><<<rows_of(g), kThreads, 0, stream>>>(
        g, static_cast<T*>(out.raw_data()), out.stride(0), out.stride(1), out.stride(2), out.size(3),
        const_cast<float*>(acc_ptr<float>(logsumexp, "logsumexp")));
  });
}

void attention_backward_stats(const tensor::Tensor& logsumexp, const tensor::Tensor& stats) {
  const int64_t n = logsumexp.numel();
  if (n == 0) return;
  launch_floating("cudnn::kernels::attention_backward_stats", stats, [&]<class T, class A>(cudaStream_t stream) {
    (void)sizeof(A);
    backward_stats_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
        acc_ptr<float>(logsumexp, "logsumexp"), const_cast<float*>(acc_ptr<float>(stats, "statistics")), n);
  });
}

void lengths_to_int32(const int64_t* in, int32_t* out, int64_t n, int device) {
  if (n == 0) return;
  tensor::cuda::DeviceGuard guard(device);
  lengths_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0,
                   static_cast<cudaStream_t>(tensor::cuda::stream(device))>>>(in, out, n);
  CUDA_CHECK_LAUNCH("cudnn::kernels::lengths_to_int32");
}

}  // namespace cudnn::kernels
