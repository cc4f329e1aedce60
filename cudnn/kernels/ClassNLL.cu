// ClassNLL.cu
#include "cudnn/kernels/ClassNLL.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cudnn/kernels/DeviceMath.cuh"
#include "cudnn/kernels/Dispatch.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/BlockFold.cuh"
#include "tensor/cuda/CudaCheck.h"
#include "tensor/cuda/Pack.h"

namespace cudnn::kernels {

namespace {

constexpr int kThreads = 512;
constexpr long long kNoBad = INT64_MAX;

// v in A: float32 and the 16-bit types through float, float64 as it is.
template <class A, class T>
__device__ inline A to_acc(T v) {
  if constexpr (sizeof(T) == 8)
    return v;
  else
    return static_cast<A>(static_cast<float>(v));
}

template <class T>
__device__ inline double widen(T v) {
  return to_acc<double>(v);
}

// The NLL gradient's scale: `scale` divided by the counted targets' total weight sums[1] under
// size_average when that is positive (nn's normalisation).
__device__ inline double normalized(double scale, const double* sums, bool size_average) {
  return sums && size_average && sums[1] > 0 ? scale * (1.0 / sums[1]) : scale;
}

// The NLL gradient at a counted target t: -w[t] * scale.
template <class T>
__device__ inline double target_gradient(const T* weights, int64_t t, double scale) {
  return -(weights ? widen(weights[t]) : 1.0) * scale;
}

// One block. out[0] = loss sum, out[1] = weight sum, out[2] = first bad flat index (or -1).
// logp may be null (the weight sum alone, for the normalised backward). picked, where given,
// holds each target's log-probability before logp's rounding (the row kernels' forward), and
// the loss reads it instead of logp.
template <class T>
__global__ void nll_sums_kernel(const T* logp, const tensor::acc_t<T>* picked, const int64_t* target, const T* weights,
                                int64_t n, int64_t classes, int64_t inner, int64_t ignore, double* out) {
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
    if (picked) {
      loss -= w * widen(picked[i]);
    } else if (logp) {
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
  scale = normalized(scale, sums, size_average);
  const int64_t total = n * classes * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pos = i % inner;
    const int64_t c = (i / inner) % classes;
    const int64_t sample = i / (inner * classes);
    const int64_t t = target[sample * inner + pos];
    double g = 0;
    if (t == c && t != ignore) g = target_gradient(weights, t, scale);
    if constexpr (sizeof(T) == 8)
      dlogp[i] = g;
    else
      dlogp[i] = T(static_cast<float>(g));
  }
}

// Cross entropy over [N x C] scores x (S), one block per row, in A (float, double for float64
// scores): logp = (x - max) - log(sum exp(x - max)), stored in L (the scores' dtype); in the
// forward, picked[row] = the target's log-probability before that rounding, for the loss; when
// dx is given, the gradient dx = g * onehot(t) - exp(logp) * g written in D, g = -w[t] / norm for
// a counted target t (0 otherwise), norm the total weight in sums[1] under size_average when
// positive: the log-softmax backward of the NLL gradient, from the unrounded log-probability
// (float32 logp gave cuDNN's softmax backward the same value). A row's middle is read and
// written in 16-byte packs (the caller checks every base's alignment), its unaligned ends
// element by element. Two kernels: the row held in registers, K packs a thread (rows up to
// kRowThreads * 8 packs), and the row read twice, the second time from L2, with an online
// log-sum-exp, for longer rows. Columns are row-relative ints (the caller checks C < 2^31): fewer
// registers, two blocks an SM.

// Row blockIdx.x of C classes: `head` unaligned columns, then `packs` packs of V from column
// `head`, then the columns from `tail` to C.
template <int V>
struct RowSpan {
  int64_t begin;
  int head, packs, tail;
  __device__ explicit RowSpan(int64_t classes) : begin(int64_t(blockIdx.x) * classes) {
    head = static_cast<int>(min(classes, (V - begin % V) % V));
    packs = static_cast<int>((classes - head) / V);
    tail = head + packs * V;
  }
};

// What the row kernels take besides the scores: the log-probabilities' row, the targets, and
// for the forward `picked`, for the backward the weights, the NLL sums and the gradient's row.
// logp, the weights and dx all have the scores' dtype S, as nn's have.
template <class S>
struct RowArgs {
  int64_t classes;
  S* logp;
  const int64_t* target;  // null: the log-probabilities alone
  tensor::acc_t<S>* picked;
  const S* weights;
  int64_t ignore;
  const double* sums;
  bool size_average;
  S* dx;  // null: the forward
};

// What a row's second pass writes, given its max m and log(sum exp(x - m)), in the scores'
// dtype S; columns are the row's.
template <class A, class S>
struct RowOutput {
  A m, log_sum;
  S* logp;           // the row's
  S* dx;             // the row's; null: the forward
  A* picked;         // the row's target log-probability (forward), or null
  A g = 0;           // the gradient's weight at the target
  int t = -1;        // the target's column, -1 when it counts for nothing

  __device__ RowOutput(A m_, A log_sum_, const RowArgs<S>& a)
      : m(m_), log_sum(log_sum_), logp(a.logp + blockIdx.x * a.classes), dx(a.dx ? a.dx + blockIdx.x * a.classes : nullptr),
        picked(a.picked && !a.dx ? a.picked + blockIdx.x : nullptr) {
    if (!a.target) return;
    const int64_t c = a.target[blockIdx.x];
    if (c != a.ignore && c >= 0 && c < a.classes) {
      if (dx) g = static_cast<A>(target_gradient(a.weights, c, normalized(1.0, a.sums, a.size_average)));
      t = static_cast<int>(c);
    }
  }
  // Column c's log-probability, rounded to S, and its gradient.
  __device__ void value(int c, A xc, S& y, S& d) const {
    const A v = (xc - m) - log_sum;
    y = static_cast<S>(v);
    if (dx) d = S((c == t ? g : A(0)) - exp_of(v) * g);
    if (picked && c == t) *picked = v;
  }
  __device__ void element(int c, A xc) const {
    S d;
    value(c, xc, logp[c], d);
    if (dx) dx[c] = d;
  }
  // The pack of V columns from c0 (16-byte aligned in x), its values from at(j).
  template <int V, class At>
  __device__ void pack(int c0, At&& at) const {
    tensor::cuda::Pack<S, V> y, d;
#pragma unroll
    for (int j = 0; j < V; ++j) value(c0 + j, at(j), y.v[j], d.v[j]);
    *reinterpret_cast<tensor::cuda::Pack<S, V>*>(logp + c0) = y;
    if (dx) *reinterpret_cast<tensor::cuda::Pack<S, V>*>(dx + c0) = d;
  }
};

// Element j of the 16-byte pack w holding S values, in A. Float16 converts with the GPU's cvt,
// which turns a NaN's payload into the canonical NaN: the row's values are all NaN then anyway.
template <class S, class A>
__device__ inline A pack_value(const uint4& w, int j) {
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};
  if constexpr (sizeof(S) == 8) {
    return __hiloint2double(static_cast<int>(words[2 * j + 1]), static_cast<int>(words[2 * j]));
  } else if constexpr (sizeof(S) == 4) {
    return __uint_as_float(words[j]);
  } else {
    const uint32_t word = words[j / 2];
    const uint16_t bits = static_cast<uint16_t>(j % 2 ? word >> 16 : word & 0xffffu);
    if constexpr (std::is_same_v<S, tensor::Half>)
      return __half2float(__ushort_as_half(bits));
    else
      return __uint_as_float(static_cast<uint32_t>(bits) << 16);
  }
}

constexpr int kRowThreads = 512;  // the register kernel's most threads a block

template <class S, int K>
__global__ void __launch_bounds__(kRowThreads, 2)
    cross_entropy_rows_in_registers_kernel(const S* x, const RowArgs<S> a) {
  using A = tensor::acc_t<S>;
  constexpr int V = 16 / sizeof(S);
  const int64_t classes = a.classes;
  __shared__ A shared[32];
  const RowSpan<V> r(classes);
  const S* row = x + r.begin;
  const uint4* packs = reinterpret_cast<const uint4*>(row + r.head);
  const int c = threadIdx.x, ct = r.tail + threadIdx.x;
  const bool has_head = c < r.head, has_tail = ct < classes;
  const A hx = has_head ? to_acc<A>(row[c]) : A(0), tx = has_tail ? to_acc<A>(row[ct]) : A(0);
  uint4 q[K];  // the raw words, converted where used: half the registers of converted values
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int p = threadIdx.x + k * blockDim.x;
    if (p < r.packs) q[k] = packs[p];
  }
  // f(v) over the thread's values
  auto each = [&](auto&& f) {
    if (has_head) f(hx);
    if (has_tail) f(tx);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (threadIdx.x + k * blockDim.x >= r.packs) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) f(pack_value<S, A>(q[k], j));
    }
  };
  // the two-pass formula over registers: a NaN max, or x - max NaN at an infinity, makes the
  // sum NaN and so the row (Note [Online log-sum-exp])
  A m = -INFINITY;
  each([&](A v) { m = nan_max(m, v); });
  m = warp_block_reduce(
      m, [](A a, A b) { return nan_max(a, b); }, A(-INFINITY), shared);
  A sum = 0;
  each([&](A v) { sum += exp_of(v - m); });
  sum = warp_block_reduce(
      sum, [](A a, A b) { return a + b; }, A(0), shared);
  const RowOutput<A, S> out(m, log_of(sum), a);
  if (has_head) out.element(c, hx);
  if (has_tail) out.element(ct, tx);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int p = threadIdx.x + k * blockDim.x;
    if (p < r.packs) out.template pack<V>(r.head + p * V, [&](int j) { return pack_value<S, A>(q[k], j); });
  }
}

// V: the elements of a pack, 16 / sizeof(S), or 1 where a base is not 16-byte aligned.
template <class S, int V>
__global__ void cross_entropy_rows_kernel(const S* x, const RowArgs<S> a) {
  using A = tensor::acc_t<S>;
  const int64_t classes = a.classes;
  using Pk = tensor::cuda::Pack<S, V>;
  __shared__ A shared[64];
  const RowSpan<V> r(classes);
  const S* row = x + r.begin;
  const Pk* packs = reinterpret_cast<const Pk*>(row + r.head);
  OnlineLse<A> st;
  for (int c = threadIdx.x; c < r.head; c += blockDim.x) st.add(to_acc<A>(row[c]));
  for (int p = threadIdx.x; p < r.packs; p += blockDim.x) {
    const Pk q = packs[p];
#pragma unroll
    for (int j = 0; j < V; ++j) st.add(to_acc<A>(q.v[j]));
  }
  for (int c = r.tail + threadIdx.x; c < classes; c += blockDim.x) st.add(to_acc<A>(row[c]));
  const OnlineLse<A> merged = block_merge(st, shared);
  const RowOutput<A, S> out(merged.m, merged.log_sum(), a);
  for (int c = threadIdx.x; c < r.head; c += blockDim.x) out.element(c, to_acc<A>(row[c]));
  for (int p = threadIdx.x; p < r.packs; p += blockDim.x) {
    const Pk q = packs[p];
    out.template pack<V>(r.head + p * V, [&](int j) { return to_acc<A>(q.v[j]); });
  }
  for (int c = r.tail + threadIdx.x; c < classes; c += blockDim.x) out.element(c, to_acc<A>(row[c]));
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

// Launches the sums kernel into `sums` (3 doubles on logp's or dlogp's device); picked (the
// row kernels' forward) in like's accumulation dtype.
void launch_sums(const tensor::Tensor* logp, const tensor::Tensor& like, const tensor::Tensor& target,
                 const tensor::Tensor& weights, int64_t ignore_index, const tensor::Tensor& sums,
                 const tensor::Tensor* picked = nullptr) {
  const Layout l = layout_of(like);
  dispatch_floating("cudnn criteria (NLL sums)", like, [&](auto tag) {
    using T = decltype(tag);
    nll_sums_kernel<T><<<1, kThreads, 0, stream_of(like)>>>(
        logp ? static_cast<const T*>(logp->raw_data()) : nullptr,
        picked ? static_cast<const tensor::acc_t<T>*>(picked->raw_data()) : nullptr, target.data<int64_t>(),
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
                 int64_t ignore_index, const tensor::Tensor* picked) {
  tensor::cuda::DeviceGuard guard(logp.device().index);
  const tensor::Tensor sums = tensor::empty({3}, tensor::DType::Float64, logp.device());
  launch_sums(&logp, logp, target, weights, ignore_index, sums, picked);
  const std::vector<double> host = sums.to_vector<double>();  // the one host read
  return NLLSums{host[0], host[1], static_cast<int64_t>(host[2])};
}

namespace {
// the host's division in nll_of (cudnn/ops/nll.cpp), on the device
__global__ void nll_loss_kernel(const double* sums, bool size_average, double* loss) {
  const double w = sums[1];
  loss[0] = __ddiv_rn(sums[0], size_average && w > 0 ? w : 1.0);
}
}  // namespace

void nll_loss_on_device(const tensor::Tensor& logp, const tensor::Tensor& target, const tensor::Tensor& weights,
                        int64_t ignore_index, bool size_average, const tensor::Tensor& loss,
                        const tensor::Tensor* picked) {
  tensor::cuda::DeviceGuard guard(logp.device().index);
  const tensor::Tensor sums = tensor::empty({3}, tensor::DType::Float64, logp.device());  // queued use only
  launch_sums(&logp, logp, target, weights, ignore_index, sums, picked);
  nll_loss_kernel<<<1, 1, 0, stream_of(logp)>>>(sums.data<double>(), size_average, loss.data<double>());
  CUDA_CHECK_LAUNCH("nll_loss_on_device");
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

namespace {

bool aligned(const tensor::Tensor& t, size_t bytes) { return reinterpret_cast<uintptr_t>(t.raw_data()) % bytes == 0; }

// The row kernels over scores [N x C] into logp (the scores' dtype): in registers where the
// row fits, read twice otherwise or where a base is not 16-byte aligned (packs of one element
// then). The forward (no gradient) writes picked; the backward, dx. False, having done nothing,
// for other layouts and dtypes.
struct Gradient {
  const tensor::Tensor& weights;
  bool size_average;
  const tensor::Tensor& dx;
};

bool cross_entropy_rows(const tensor::Tensor& scores, const tensor::Tensor& target, int64_t ignore_index,
                        const tensor::Tensor& logp, const tensor::Tensor* picked, const Gradient* gradient) {
  const Layout l = layout_of(scores);
  if (l.inner != 1 || !scores.is_contiguous() || !logp.is_contiguous() || logp.numel() != scores.numel() ||
      logp.dtype() != scores.dtype() || l.n > 2147483647 || l.classes > 2147483647) {
    return false;
  }
  if (scores.dtype() == tensor::DType::Int64 || scores.dtype() == tensor::DType::UInt8) return false;
  if (gradient && (!gradient->dx.is_contiguous() || gradient->dx.numel() != scores.numel() ||
                   gradient->dx.dtype() != scores.dtype() ||
                   (gradient->weights.defined() && gradient->weights.dtype() != scores.dtype()))) {
    return false;
  }
  if (scores.numel() == 0) return true;
  tensor::cuda::DeviceGuard guard(scores.device().index);
  const int64_t n = l.n, classes = l.classes;
  // freed at the end of this call but still in use by the queued kernels: safe, as in
  // nll_backward_normalized
  tensor::Tensor sums;
  if (gradient && gradient->size_average) {
    sums = tensor::empty({3}, tensor::DType::Float64, scores.device());
    launch_sums(nullptr, logp, target, gradient->weights, ignore_index, sums);
  }
  dispatch_floating("cudnn criteria (cross entropy)", scores, [&](auto tag) {
    using S = decltype(tag);
    constexpr int kV = tensor::cuda::kPack16<S>;
    const bool packs = aligned(scores, 16) && aligned(logp, 16) && (!gradient || aligned(gradient->dx, 16));
    const int64_t most_packs = classes / kV + 1;  // a row's, whatever its alignment
    const RowArgs<S> args{
        classes,
        static_cast<S*>(logp.raw_data()),
        target.data<int64_t>(),
        picked ? static_cast<tensor::acc_t<S>*>(picked->raw_data()) : nullptr,
        gradient && gradient->weights.defined() ? static_cast<const S*>(gradient->weights.raw_data()) : nullptr,
        ignore_index,
        sums.defined() ? sums.data<double>() : nullptr,
        gradient && gradient->size_average,
        gradient ? static_cast<S*>(gradient->dx.raw_data()) : nullptr};
    const S* x = static_cast<const S*>(scores.raw_data());
    const cudaStream_t stream = stream_of(scores);
    constexpr int kMostK = sizeof(S) == 8 ? 4 : 8;  // float64 spills beyond 4 packs (64 registers)
    if (packs && most_packs <= kRowThreads * kMostK) {
      // the row in registers: K packs a thread, K the smallest power of two that fits
      int k = 1;
      while (int64_t(k) * kRowThreads < most_packs) k *= 2;
      const unsigned threads =
          static_cast<unsigned>(std::clamp<int64_t>(((most_packs + k - 1) / k + 31) / 32 * 32, 32, kRowThreads));
      auto launch = [&](auto kk) {
        constexpr int K = decltype(kk)::value;
        cross_entropy_rows_in_registers_kernel<S, K><<<static_cast<unsigned>(n), threads, 0, stream>>>(x, args);
      };
      if (k == 1)
        launch(std::integral_constant<int, 1>{});
      else if (k == 2)
        launch(std::integral_constant<int, 2>{});
      else if (k == 4)
        launch(std::integral_constant<int, 4>{});
      else if constexpr (kMostK == 8)
        launch(std::integral_constant<int, 8>{});
    } else {
      const int64_t per_thread = packs ? kV : 1;
      const unsigned threads =
          static_cast<unsigned>(std::clamp<int64_t>((classes / per_thread + 31) / 32 * 32, 32, 1024));
      if (packs)
        cross_entropy_rows_kernel<S, kV><<<static_cast<unsigned>(n), threads, 0, stream>>>(x, args);
      else
        cross_entropy_rows_kernel<S, 1><<<static_cast<unsigned>(n), threads, 0, stream>>>(x, args);
    }
    CUDA_CHECK_LAUNCH("cross_entropy_rows");
  });
  return true;
}

}  // namespace

bool cross_entropy_rows_forward(const tensor::Tensor& scores, const tensor::Tensor& target, int64_t ignore_index,
                                const tensor::Tensor& logp, const tensor::Tensor& picked) {
  return cross_entropy_rows(scores, target, ignore_index, logp, &picked, nullptr);
}

bool cross_entropy_backward(const tensor::Tensor& scores, const tensor::Tensor& target, const tensor::Tensor& weights,
                            int64_t ignore_index, bool size_average, const tensor::Tensor& logp,
                            const tensor::Tensor& dx) {
  const Gradient gradient{weights, size_average, dx};
  return cross_entropy_rows(scores, target, ignore_index, logp, nullptr, &gradient);
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
