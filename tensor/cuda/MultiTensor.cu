// MultiTensor.cu: the kernels of tensor/MultiTensor.h, SGD and Adam updates of lists of
// contiguous CUDA tensors in a few launches.
// Note [Multi-tensor launches]: the host cuts every tensor into chunks of kChunk elements and
// packs up to kMaxEntries tensors (pointers, element counts, per-tensor scalars and the running
// count of chunks) into a Table passed BY VALUE as a kernel argument, under the 4 KiB argument
// limit: no device buffer to fill, so no host synchronisation and nothing to keep alive after
// the launch (and the launches can be captured in a CUDA graph). Block b of a launch finds its
// tensor by binary search over the chunk counts and updates that one chunk. A list of n tensors
// takes ceil(n / kMaxEntries) launches (a tensor longer than kMaxEntryElements takes several
// entries, so that the chunk counts fit in 32 bits).
// Note [Rounding like the tensor ops]: each value is computed as nn's per-tensor path computes
// it with tensor ops (tensor/cuda/CudaKernels.cu): in acc_t<T> (float for float16/bfloat16),
// every product and sum rounded on its own (__fmul_rn, __fadd_rn, ...: nvcc contracts nothing
// into an FMA), scalars converted from double to acc_t<T> on the host as the ops convert them,
// and a 16-bit result rounded to T wherever an op would store it in a 16-bit tensor (stored<T>).
// So the fused step gives the per-tensor step's bits in every dtype, and the CPU's (the tensor
// ops' CPU twins, nn/kernels/Optimizer.h) in float32 and float64.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tensor/AdamScalars.h"
#include "tensor/Cuda.h"
#include "tensor/MultiTensor.h"
#include "tensor/cuda/BlockFold.cuh"
#include "tensor/cuda/CudaCheck.h"

namespace tensor::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 4096;  // elements per block, 16 per thread
constexpr int kMaxEntries = 48;
constexpr int64_t kMaxEntryElements = kChunk << 18;  // 2^18 chunks: a launch has < 2^31 blocks

// ------------------------------------------------------------------ arithmetic

// Host and device: the device form runs; the host form (IEEE operations of the same rounding)
// lets a host program replay a launch element by element.
#define MT_HD __host__ __device__ __forceinline__

template <class T>
constexpr bool is_16bit_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

#if defined(__CUDA_ARCH__)
MT_HD float mul(float a, float b) { return __fmul_rn(a, b); }
MT_HD double mul(double a, double b) { return __dmul_rn(a, b); }
MT_HD float add(float a, float b) { return __fadd_rn(a, b); }
MT_HD double add(double a, double b) { return __dadd_rn(a, b); }
MT_HD float div(float a, float b) { return __fdiv_rn(a, b); }
MT_HD double div(double a, double b) { return __ddiv_rn(a, b); }
MT_HD float sqrt_rn(float a) { return __fsqrt_rn(a); }
MT_HD double sqrt_rn(double a) { return __dsqrt_rn(a); }
#else
template <class C>
C mul(C a, C b) {
  return a * b;
}
template <class C>
C add(C a, C b) {
  return a + b;
}
template <class C>
C div(C a, C b) {
  return a / b;
}
template <class C>
C sqrt_rn(C a) {
  return std::sqrt(a);
}
#endif

template <class T>
MT_HD acc_t<T> load(const T* base, int64_t i) {
  if constexpr (is_16bit_v<T>) {
    return static_cast<float>(base[i]);
  } else {
    return base[i];
  }
}
template <class T>
MT_HD void store(T* base, int64_t i, acc_t<T> v) {
  base[i] = T(v);
}
// An op's result as a tensor of T holds it (see Note [Rounding like the tensor ops]).
template <class T>
MT_HD acc_t<T> stored(acc_t<T> v) {
  if constexpr (is_16bit_v<T>) {
    return static_cast<float>(T(v));
  } else {
    return v;
  }
}

// ------------------------------------------------------------------ the table and the launch

template <class T>
struct Entry {
  T* p;
  const T* g;
  T* s1;  // SGD: momentum buffer; Adam: exp_avg
  T* s2;  // Adam: exp_avg_sq
  int64_t n;
  acc_t<T> a = 0, b = 0;  // Adam: -lr / bias1, 1 / sqrt(bias2)
  uint8_t flag = 0;       // SGD: the momentum buffer is new
  uint32_t slot = 0;      // capturable Adam: the parameter's index in its device scalars
};

template <class T>
struct Table {
  T* p[kMaxEntries];
  const T* g[kMaxEntries];
  T* s1[kMaxEntries];
  T* s2[kMaxEntries];
  int64_t n[kMaxEntries];
  acc_t<T> a[kMaxEntries], b[kMaxEntries];
  uint8_t flag[kMaxEntries];
  uint32_t slot[kMaxEntries];
  uint32_t chunk_start[kMaxEntries + 1];  // entry e: blocks chunk_start[e] to chunk_start[e + 1] - 1
  int count;
};

// The entry block `block` works on: the last one starting at or before it.
template <class T>
MT_HD int entry_of(const Table<T>& table, uint32_t block) {
  int lo = 0, hi = table.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (table.chunk_start[mid] <= block) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// What thread `thread` of block `block` does: its elements of the block's chunk.
template <class T, class Op>
MT_HD void update_chunk(const Table<T>& table, uint32_t block, uint32_t thread, const Op& op) {
  const int lo = entry_of(table, block);
  const Entry<T> e{table.p[lo], table.g[lo], table.s1[lo],   table.s2[lo],  table.n[lo],
                   table.a[lo], table.b[lo], table.flag[lo], table.slot[lo]};
  const int64_t begin = static_cast<int64_t>(block - table.chunk_start[lo]) * kChunk;
  const int64_t end = begin + kChunk < e.n ? begin + kChunk : e.n;
  for (int64_t i = begin + thread; i < end; i += kThreads) op(e, i);
}

// __grid_constant__: the table is read in place, never copied to local memory, though indexed at
// run time.
template <class T, class Op>
__global__ void __launch_bounds__(kThreads) multi_tensor_kernel(const __grid_constant__ Table<T> table, Op op) {
  update_chunk(table, blockIdx.x, threadIdx.x, op);
}

// See Note [Multi-tensor launches]
// Packs the entries into tables and calls run(table, number of chunks) for each.
template <class T, class Run>
void for_each_table(const std::vector<Entry<T>>& entries, Run&& run) {
  Table<T> table{};
  uint32_t chunks = 0;
  auto flush = [&] {
    if (table.count == 0) return;
    table.chunk_start[table.count] = chunks;
    run(table, chunks);
    table = Table<T>{};
    chunks = 0;
  };
  for (const Entry<T>& e : entries) {
    for (int64_t offset = 0; offset < e.n; offset += kMaxEntryElements) {
      const int k = table.count;
      const int64_t n = std::min(kMaxEntryElements, e.n - offset);
      table.p[k] = e.p + offset;
      table.g[k] = e.g + offset;
      table.s1[k] = e.s1 ? e.s1 + offset : nullptr;
      table.s2[k] = e.s2 ? e.s2 + offset : nullptr;
      table.n[k] = n;
      table.a[k] = e.a;
      table.b[k] = e.b;
      table.flag[k] = e.flag;
      table.slot[k] = e.slot;
      table.chunk_start[k] = chunks;
      chunks += static_cast<uint32_t>((n + kChunk - 1) / kChunk);
      if (++table.count == kMaxEntries) flush();
    }
  }
  flush();
}

template <class T, class Op>
void launch(const std::vector<Entry<T>>& entries, const Op& op, int device) {
  static_assert(sizeof(Table<T>) + sizeof(Op) <= 4000, "kernel arguments over CUDA's 4 KiB");
  DeviceGuard guard(device);
  const auto stream = static_cast<cudaStream_t>(cuda::stream(device));
  for_each_table(entries, [&](const Table<T>& table, uint32_t chunks) {
    multi_tensor_kernel<T, Op><<<chunks, kThreads, 0, stream>>>(table, op);
    CUDA_CHECK_LAUNCH("tensor multi-tensor kernel");
  });
}

// ------------------------------------------------------------------ the updates

// nn::SGD::step's tensor ops, each commented; see Note [Rounding like the tensor ops].
template <class T>
struct SgdOp {
  using C = acc_t<T>;
  C weightDecay, momentum, damping, negLr;  // damping: 1 - dampening
  bool decay, useMomentum, nesterov;
  const float* found;  // GradScaler's found-Inf flag, or nullptr: nonzero skips the step
  MT_HD void operator()(const Entry<T>& e, int64_t i) const {
    if (found && *found != 0) return;
    const C p = load(e.p, i);
    C d = load(e.g, i);
    if (decay) d = stored<T>(add(d, mul(weightDecay, p)));  // scratch.copy_(grad).add_(p, weightDecay)
    if (useMomentum) {
      C buf = d;  // fresh.copy_(d)
      if (!e.flag) {
        buf = stored<T>(mul(load(e.s1, i), momentum));  // buf.mul_(momentum)
        buf = stored<T>(add(buf, mul(damping, d)));     //    .add_(d, 1 - dampening)
      }
      store(e.s1, i, buf);
      d = nesterov ? stored<T>(add(d, mul(momentum, buf))) : buf;  // scratch.add_(buf, momentum)
    }
    store(e.p, i, add(p, mul(negLr, d)));  // p.add_(d, -lr)
  }
};

// nn::Adam::step's tensor ops, each commented; a = -lr / bias1, b = 1 / sqrt(bias2) per tensor.
// Capturable Adam: a, b and keep come from the device (`scalars`, three doubles a parameter, written
// by adam_prepare_kernel), converted to C as the host converts them; `found` as SgdOp's.
template <class T>
struct AdamOp {
  using C = acc_t<T>;
  C weightDecay, beta1, beta2, c1, c2, eps;  // c1, c2: 1 - beta1, 1 - beta2
  C keep;                                    // AdamW: 1 - lr * weightDecay
  bool decay, shrink;                        // L2 term (Adam), decoupled decay (AdamW)
  const double* scalars = nullptr;           // capturable: {a, b, keep} per slot
  const float* found = nullptr;
  MT_HD void operator()(Entry<T> e, int64_t i) const {
    C keepBy = keep;
    if (scalars) {
      if (found && *found != 0) return;
      const double* s = scalars + 3 * static_cast<int64_t>(e.slot);
      e.a = static_cast<C>(s[0]);
      e.b = static_cast<C>(s[1]);
      keepBy = static_cast<C>(s[2]);
    }
    C p = load(e.p, i);
    if (shrink) p = stored<T>(mul(p, keepBy));  // p.mul_(1 - lr * weightDecay)
    C g = load(e.g, i);
    if (decay) g = stored<T>(add(g, mul(weightDecay, p)));  // decayedGrad.copy_(grad).add_(p, weightDecay)
    C m = stored<T>(mul(load(e.s1, i), beta1));             // m.mul_(beta1)
    m = stored<T>(add(m, mul(c1, g)));                      //  .add_(g, 1 - beta1)
    C v = stored<T>(mul(load(e.s2, i), beta2));             // v.mul_(beta2)
    v = stored<T>(add(v, mul(c2, mul(g, g))));              //  .addcmul_(g, g, 1 - beta2)
    store(e.s1, i, m);
    store(e.s2, i, v);
    C denom = stored<T>(sqrt_rn(v));                 // denom.copy_(v).sqrt_()
    denom = stored<T>(mul(denom, e.b));              //  .div_(sqrt(bias2)): a product by 1 / sqrt(bias2)
    denom = stored<T>(add(denom, eps));              //  .add_(eps)
    store(e.p, i, add(p, mul(e.a, div(m, denom))));  // p.addcdiv_(m, denom, -lr / bias1)
  }
};

// ------------------------------------------------------------------ norms, clipping, unscaling

// Folds the kThreads partial norms in `shared` (written by each thread) into shared[0]: the
// largest |x| for the inf-norm (NaN kept, as torch's norms do), else the sum.
template <class C>
__device__ void fold_norms(C* shared, bool inf) {
  block_fold<kThreads>([&](unsigned i, unsigned j) {
    const C a = shared[i], b = shared[j];
    shared[i] = inf ? (a != a || b != b ? a + b : (a > b ? a : b)) : a + b;
  });
}

// Note [Deterministic multi-tensor norms]: every block reduces its chunk to one partial value
// (a sum of squares, or a largest |x|) written to its own slot of a device buffer, the slots
// of all launches in chunk order; one single-block kernel then folds the partials in a fixed
// order. No atomics, so the norm has the same bits on every run, and nothing reaches the host.
template <class T>
__global__ void __launch_bounds__(kThreads)
    norm_partials_kernel(const __grid_constant__ Table<T> table, acc_t<T>* partials, bool inf) {
  using C = acc_t<T>;
  const int k = entry_of(table, blockIdx.x);
  const T* x = table.p[k];
  const int64_t begin = static_cast<int64_t>(blockIdx.x - table.chunk_start[k]) * kChunk;
  const int64_t end = begin + kChunk < table.n[k] ? begin + kChunk : table.n[k];
  C acc = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    const C v = load(x, i);
    // fmax drops NaN: keep it, as torch's norms do
    acc = inf ? (v != v || acc != acc ? v + acc : (fabs(v) > acc ? fabs(v) : acc)) : acc + v * v;
  }
  __shared__ C shared[kThreads];
  shared[threadIdx.x] = acc;
  fold_norms(shared, inf);
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

// Folds n partials into out[0] = the norm; with maxNorm > 0 also out[1] = the clipping factor
// min(maxNorm / (norm + 1e-6), 1) (torch.nn.utils.clip_grad_norm_'s).
template <class C>
__global__ void __launch_bounds__(kThreads) norm_finish_kernel(const C* partials, int64_t n, bool inf, C* out,
                                                               double maxNorm) {
  __shared__ C shared[kThreads];
  C acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const C v = partials[i];
    acc = inf ? (v != v || acc != acc ? v + acc : (v > acc ? v : acc)) : acc + v;
  }
  shared[threadIdx.x] = acc;
  fold_norms(shared, inf);
  if (threadIdx.x == 0) {
    const C norm = inf ? shared[0] : sqrt(shared[0]);
    out[0] = norm;
    if (maxNorm > 0) {
      const C coef = static_cast<C>(maxNorm) / (norm + static_cast<C>(1e-6));
      out[1] = coef < C(1) ? coef : C(1);  // NaN stays NaN, as torch.clamp(max=1)
    }
  }
}

// x *= factor[0] (a device scalar): the clipping step.
template <class T>
struct ScaleOp {
  const acc_t<T>* factor;
  __device__ void operator()(const Entry<T>& e, int64_t i) const { store(e.p, i, load(e.p, i) * *factor); }
};

// Optimizer::zeroGrad: x = +0 (the bits zero_() writes).
template <class T>
struct ZeroOp {
  __device__ void operator()(const Entry<T>& e, int64_t i) const { store(e.p, i, acc_t<T>(0)); }
};

// GradScaler's unscale: x *= invScale[0], and found[0] = 1 where any x is not finite.
template <class T>
struct UnscaleOp {
  const float* invScale;
  float* found;
  __device__ void operator()(const Entry<T>& e, int64_t i) const {
    const acc_t<T> v = load(e.p, i);
    if (!isfinite(v)) *found = 1.f;  // every writer writes 1: the race is benign
    store(e.p, i, v * static_cast<acc_t<T>>(*invScale));
  }
};

template <class T>
std::vector<Entry<T>> plain_entries(const std::vector<Tensor>& tensors) {
  std::vector<Entry<T>> entries;
  for (const Tensor& t : tensors) {
    if (t.numel() > 0) entries.push_back(Entry<T>{static_cast<T*>(t.raw_data()), nullptr, nullptr, nullptr, t.numel()});
  }
  return entries;
}

// ------------------------------------------------------------------ checks

// Every list as long as params, every tensor a dense CUDA tensor of params[0]'s dtype and
// device laid out as params[i] (row-major, or channels-last for a filter:
// Module::to(MemoryFormat)), so element k of each flat block is the same element (`lists` may
// hold empty lists where allowed).
void check_lists(const char* op, const std::vector<Tensor>& params,
                 std::initializer_list<std::pair<const char*, const std::vector<Tensor>*>> lists) {
  if (params.empty()) return;
  const Tensor& p0 = params[0];
  TENSOR_CHECK(p0.defined() && p0.is_cuda() && is_floating(p0.dtype()), op, ": expected floating CUDA parameters, got ",
               p0.defined() ? p0.description() : "an undefined tensor");
  auto check = [&](const char* what, size_t i, const Tensor& t) {
    TENSOR_CHECK(
        t.defined() && t.is_cuda() && t.dtype() == p0.dtype() && t.device() == p0.device() && params[i].defined() &&
            same_dense_layout(t, params[i]),
        op, ": expected ", what, " ", i, " to be a dense ", name(p0.dtype()), " tensor on ", p0.device().str(),
        " of parameter ", i, "'s shape and layout (",
        params[i].defined() ? shape_str(params[i].sizes()) : std::string("undefined"), "), got ",
        t.defined() ? t.description() + (t.is_non_overlapping_and_dense() ? "" : " (strided)") : "an undefined tensor");
  };
  for (size_t i = 0; i < params.size(); ++i) check("parameter", i, params[i]);
  for (const auto& [what, list] : lists) {
    TENSOR_CHECK(list->size() == params.size(), op, ": expected one ", what, " per parameter (", params.size(),
                 "), got ", list->size());
    for (size_t i = 0; i < params.size(); ++i) check(what, i, (*list)[i]);
  }
}

// A one-element contiguous tensor of `dtype` on `device` (a flag or a scalar read on the device).
void check_flag(const char* op, const char* what, const Tensor& t, Device device, DType dtype = DType::Float32) {
  TENSOR_CHECK(
      t.defined() && t.is_cuda() && t.device() == device && t.dtype() == dtype && t.numel() == 1 && t.is_contiguous(),
      op, ": expected ", what, " as a one-element ", name(dtype), " tensor on ", device.str(), ", got ",
      t.defined() ? t.description() : "an undefined tensor");
}

// GradScaler's scale: a one-element float32 CUDA tensor; its device is the one the other
// flags must be on.
Device check_scale(const char* op, const Tensor& scale) {
  TENSOR_CHECK(scale.defined() && scale.is_cuda(), op, ": expected a CUDA scale, got ",
               scale.defined() ? scale.description() : "an undefined tensor");
  check_flag(op, "scale", scale, scale.device());
  return scale.device();
}

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

// dispatch over the four floating dtypes
template <class F>
void dispatch_floating(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float16:
      return f(Half{});
    case DType::BFloat16:
      return f(BFloat16{});
    default:
      throw Error(::tensor::detail::concat(op, ": expected a floating dtype, got ", name(dt)));
  }
}

}  // namespace

void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& buffers,
              const std::vector<uint8_t>& first, const SgdStep& o, const Tensor& foundInf) {
  constexpr const char* op = "tensor::cuda::sgd_step";
  const bool useMomentum = o.momentum != 0;
  if (useMomentum) {
    check_lists(op, params, {{"gradient", &grads}, {"momentum buffer", &buffers}});
    TENSOR_CHECK(first.size() == params.size(), op, ": expected one 'first' flag per parameter (", params.size(),
                 "), got ", first.size());
  } else {
    check_lists(op, params, {{"gradient", &grads}});
  }
  if (params.empty()) return;
  if (foundInf.defined()) check_flag(op, "foundInf", foundInf, params[0].device());
  dispatch_floating(params[0].dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    std::vector<Entry<T>> entries;
    for (size_t i = 0; i < params.size(); ++i) {
      Entry<T> e{ptr<T>(params[i]), ptr<T>(grads[i]), useMomentum ? ptr<T>(buffers[i]) : nullptr, nullptr,
                 params[i].numel()};
      e.flag = useMomentum && first[i] ? 1 : 0;
      entries.push_back(e);
    }
    const SgdOp<T> sgd{static_cast<C>(o.weightDecay),
                       static_cast<C>(o.momentum),
                       static_cast<C>(1 - o.dampening),
                       static_cast<C>(-o.lr),
                       o.weightDecay != 0,
                       useMomentum,
                       o.nesterov,
                       foundInf.defined() ? static_cast<const float*>(foundInf.raw_data()) : nullptr};
    launch(entries, sgd, params[0].device().index);
  });
}

namespace {
// Adam's launches over checked lists: the per-tensor scalars from the host's bias corrections
// (bias1, bias2) or, capturable, from the device (`scalars`, with `found`).
void adam_launch(const char* op, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& expAvg, const std::vector<Tensor>& expAvgSq,
                 const std::vector<double>* bias1, const std::vector<double>* bias2, const AdamStep& o,
                 const double* scalars, const float* found) {
  dispatch_floating(params[0].dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    std::vector<Entry<T>> entries;
    for (size_t i = 0; i < params.size(); ++i) {
      Entry<T> e{ptr<T>(params[i]), ptr<T>(grads[i]), ptr<T>(expAvg[i]), ptr<T>(expAvgSq[i]), params[i].numel()};
      if (bias1) {
        // the scalars of addcdiv_(m, denom, -lr / bias1) and div_(sqrt(bias2)) (= mul_(1 / sqrt(bias2)))
        e.a = static_cast<C>(-o.lr / (*bias1)[i]);
        e.b = static_cast<C>(1.0 / std::sqrt((*bias2)[i]));
      }
      e.slot = static_cast<uint32_t>(i);
      entries.push_back(e);
    }
    const bool decay = o.weightDecay != 0;
    const AdamOp<T> adam{static_cast<C>(o.weightDecay),
                         static_cast<C>(o.beta1),
                         static_cast<C>(o.beta2),
                         static_cast<C>(1 - o.beta1),
                         static_cast<C>(1 - o.beta2),
                         static_cast<C>(o.eps),
                         static_cast<C>(1 - o.lr * o.weightDecay),
                         decay && !o.decoupled,
                         decay && o.decoupled,
                         scalars,
                         found};
    launch(entries, adam, params[0].device().index);
  });
}

// Capturable Adam's counters: one thread a parameter advances its step count (unless *found) and
// writes {a, b, keep} (tensor/AdamScalars.h) at its slot, before the update launches read them.
constexpr int kMaxSteps = 256;
struct StepTable {
  int64_t* step[kMaxSteps];
  int count;
  uint32_t first;  // the slot of step[0]
};

__global__ void adam_prepare_kernel(const __grid_constant__ StepTable table, const double* lr, const float* found,
                                    double beta1, double beta2, double weightDecay, double* scalars) {
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= table.count || (found && *found != 0)) return;
  const int64_t t = *table.step[k] + 1;
  *table.step[k] = t;
  const adam::Scalars s = adam::scalars(*lr, beta1, beta2, weightDecay, t);
  double* out = scalars + 3 * static_cast<int64_t>(table.first + static_cast<uint32_t>(k));
  out[0] = s.a;
  out[1] = s.b;
  out[2] = s.keep;
}
}  // namespace

void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& expAvg,
               const std::vector<Tensor>& expAvgSq, const std::vector<double>& bias1, const std::vector<double>& bias2,
               const AdamStep& o) {
  constexpr const char* op = "tensor::cuda::adam_step";
  check_lists(op, params, {{"gradient", &grads}, {"exp_avg", &expAvg}, {"exp_avg_sq", &expAvgSq}});
  TENSOR_CHECK(bias1.size() == params.size() && bias2.size() == params.size(), op,
               ": expected one bias correction of each kind per parameter (", params.size(), "), got ", bias1.size(),
               " and ", bias2.size());
  if (params.empty()) return;
  adam_launch(op, params, grads, expAvg, expAvgSq, &bias1, &bias2, o, nullptr, nullptr);
}

void adam_step_capturable(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                          const std::vector<Tensor>& expAvg, const std::vector<Tensor>& expAvgSq,
                          const std::vector<Tensor>& steps, const Tensor& lr, const AdamStep& o,
                          const Tensor& foundInf) {
  constexpr const char* op = "tensor::cuda::adam_step_capturable";
  check_lists(op, params, {{"gradient", &grads}, {"exp_avg", &expAvg}, {"exp_avg_sq", &expAvgSq}});
  TENSOR_CHECK(steps.size() == params.size(), op, ": expected one step count per parameter (", params.size(), "), got ",
               steps.size());
  if (params.empty()) return;
  const Device device = params[0].device();
  for (const Tensor& t : steps) check_flag(op, "a step count", t, device, DType::Int64);
  check_flag(op, "lr", lr, device, DType::Float64);
  if (foundInf.defined()) check_flag(op, "foundInf", foundInf, device);
  const float* found = foundInf.defined() ? static_cast<const float*>(foundInf.raw_data()) : nullptr;
  // freed at the end of this call but still in use by the queued kernels: safe on the device's one
  // stream; while capturing, its block stays in the graph's pool (Note [CUDA graphs])
  const Tensor scalars = empty({static_cast<int64_t>(3 * params.size())}, DType::Float64, device);
  {
    DeviceGuard guard(device.index);
    const auto stream = static_cast<cudaStream_t>(cuda::stream(device.index));
    for (size_t begin = 0; begin < steps.size(); begin += kMaxSteps) {
      StepTable table{};
      table.first = static_cast<uint32_t>(begin);
      table.count = static_cast<int>(std::min<size_t>(kMaxSteps, steps.size() - begin));
      for (int k = 0; k < table.count; ++k) table.step[k] = static_cast<int64_t*>(steps[begin + k].raw_data());
      constexpr int threads = 64;
      adam_prepare_kernel<<<(table.count + threads - 1) / threads, threads, 0, stream>>>(
          table, static_cast<const double*>(lr.raw_data()), found, o.beta1, o.beta2, o.weightDecay,
          static_cast<double*>(scalars.raw_data()));
      CUDA_CHECK_LAUNCH("tensor::cuda::adam_step_capturable (counts)");
    }
  }
  adam_launch(op, params, grads, expAvg, expAvgSq, nullptr, nullptr, o, static_cast<const double*>(scalars.raw_data()),
              found);
}

namespace {
// The norm (and clipping factor) of a checked list, in a new [2] tensor of acc_t on the device.
Tensor norm_of(const char* op, const std::vector<Tensor>& tensors, double normType, double maxNorm) {
  check_lists(op, tensors, {});
  TENSOR_CHECK(!tensors.empty(), op, ": expected at least one tensor, got none");
  TENSOR_CHECK(normType == 2 || std::isinf(normType), op, ": expected normType 2 or inf, got ", normType);
  const bool inf = std::isinf(normType);
  const Device device = tensors[0].device();
  const DType acc = tensors[0].dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  Tensor out = zeros({2}, acc, device);
  dispatch_floating(tensors[0].dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const auto entries = plain_entries<T>(tensors);
    int64_t total = 0;  // chunks over every launch: one partial each
    for_each_table(entries, [&](const Table<T>&, uint32_t chunks) { total += chunks; });
    Tensor partials = empty({std::max<int64_t>(total, 1)}, acc, device);
    DeviceGuard guard(device.index);
    const auto stream = static_cast<cudaStream_t>(cuda::stream(device.index));
    int64_t offset = 0;
    for_each_table(entries, [&](const Table<T>& table, uint32_t chunks) {
      norm_partials_kernel<T><<<chunks, kThreads, 0, stream>>>(table, static_cast<C*>(partials.raw_data()) + offset,
                                                               inf);
      CUDA_CHECK_LAUNCH("tensor multi-tensor norm");
      offset += chunks;
    });
    norm_finish_kernel<C><<<1, kThreads, 0, stream>>>(static_cast<const C*>(partials.raw_data()), total, inf,
                                                       static_cast<C*>(out.raw_data()), maxNorm);
    CUDA_CHECK_LAUNCH("tensor multi-tensor norm (finish)");
  });
  return out;
}
}  // namespace

Tensor multi_tensor_norm(const std::vector<Tensor>& tensors, double normType) {
  return norm_of("tensor::cuda::multi_tensor_norm", tensors, normType, 0).narrow(0, 0, 1).view({});
}

Tensor clip_by_norm(const std::vector<Tensor>& tensors, double maxNorm, double normType) {
  constexpr const char* op = "tensor::cuda::clip_by_norm";
  TENSOR_CHECK(maxNorm > 0 && std::isfinite(maxNorm), op, ": expected a finite maxNorm > 0, got ", maxNorm);
  const Tensor out = norm_of(op, tensors, normType, maxNorm);
  dispatch_floating(tensors[0].dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    launch(plain_entries<T>(tensors), ScaleOp<T>{static_cast<const C*>(out.raw_data()) + 1},
           tensors[0].device().index);
  });
  return out.narrow(0, 0, 1).view({});
}

void unscale_and_check(const std::vector<Tensor>& tensors, const Tensor& foundInf, const Tensor& invScale) {
  constexpr const char* op = "tensor::cuda::unscale_and_check";
  check_lists(op, tensors, {});
  if (tensors.empty()) return;
  const Device device = tensors[0].device();
  check_flag(op, "foundInf", foundInf, device);
  check_flag(op, "invScale", invScale, device);
  dispatch_floating(tensors[0].dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    launch(plain_entries<T>(tensors),
           UnscaleOp<T>{static_cast<const float*>(invScale.raw_data()), static_cast<float*>(foundInf.raw_data())},
           device.index);
  });
}

void scale_by(const std::vector<Tensor>& tensors, const Tensor& factor) {
  constexpr const char* op = "tensor::cuda::scale_by";
  check_lists(op, tensors, {});
  if (tensors.empty()) return;
  const Device device = tensors[0].device();
  const DType acc = tensors[0].dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  check_flag(op, "factor", factor, device, acc);
  dispatch_floating(tensors[0].dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    launch(plain_entries<T>(tensors), ScaleOp<T>{static_cast<const acc_t<T>*>(factor.raw_data())}, device.index);
  });
}

void zero_tensors(const std::vector<Tensor>& tensors) {
  constexpr const char* op = "tensor::cuda::zero_tensors";
  check_lists(op, tensors, {});
  if (tensors.empty()) return;
  dispatch_floating(tensors[0].dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    launch(plain_entries<T>(tensors), ZeroOp<T>{}, tensors[0].device().index);
  });
}

namespace {
__global__ void scaler_prepare_kernel(const float* scale, float* inv, float* found) {
  inv[0] = static_cast<float>(1.0 / static_cast<double>(scale[0]));  // GradScaler::unscale's inverse
  found[0] = 0.f;
}

// GradScaler::update's host arithmetic, operation by operation (float64, then float32).
__global__ void scaler_update_kernel(float* scale, const float* found, int64_t* counts, double growth, double backoff,
                                     int64_t interval, bool stepped) {
  double s = scale[0];
  if (found[0] != 0) {
    s = __dmul_rn(s, backoff);
    counts[0] = 0;
    if (stepped) ++counts[1];
  } else if (++counts[0] == interval) {
    const double grown = __dmul_rn(s, growth);
    if (isfinite(grown)) s = grown;
    counts[0] = 0;
  }
  scale[0] = static_cast<float>(s);
}
}  // namespace

void scaler_prepare_unscale(const Tensor& scale, const Tensor& invScale, const Tensor& foundInf) {
  constexpr const char* op = "tensor::cuda::scaler_prepare_unscale";
  const Device device = check_scale(op, scale);
  check_flag(op, "invScale", invScale, device);
  check_flag(op, "foundInf", foundInf, device);
  DeviceGuard guard(device.index);
  scaler_prepare_kernel<<<1, 1, 0, static_cast<cudaStream_t>(cuda::stream(device.index))>>>(
      static_cast<const float*>(scale.raw_data()), static_cast<float*>(invScale.raw_data()),
      static_cast<float*>(foundInf.raw_data()));
  CUDA_CHECK_LAUNCH("tensor::cuda::scaler_prepare_unscale");
}

void scaler_update(const Tensor& scale, const Tensor& foundInf, const Tensor& counts, double growth, double backoff,
                   int64_t interval, bool stepped) {
  constexpr const char* op = "tensor::cuda::scaler_update";
  const Device device = check_scale(op, scale);
  check_flag(op, "foundInf", foundInf, device);
  TENSOR_CHECK(counts.defined() && counts.device() == device && counts.dtype() == DType::Int64 && counts.numel() == 2 &&
                   counts.is_contiguous(),
               op, ": expected counts as two contiguous int64 values on ", device.str(), ", got ",
               counts.defined() ? counts.description() : "an undefined tensor");
  DeviceGuard guard(device.index);
  scaler_update_kernel<<<1, 1, 0, static_cast<cudaStream_t>(cuda::stream(device.index))>>>(
      static_cast<float*>(scale.raw_data()), static_cast<const float*>(foundInf.raw_data()),
      static_cast<int64_t*>(counts.raw_data()), growth, backoff, interval, stepped);
  CUDA_CHECK_LAUNCH("tensor::cuda::scaler_update");
}

}  // namespace tensor::cuda
