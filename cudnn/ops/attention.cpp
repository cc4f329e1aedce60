// attention.cpp: cudnn::sdpa and its backward (attention.h): the fused cuDNN graph where it
// builds and runs, the GEMM + softmax-kernel path otherwise.
#include "cudnn/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

#include "cudnn/core/Check.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "cudnn/kernels/Attention.h"
#include "cudnn/ops/attention_graph.h"
#include "cudnn/ops/blas.h"
#include "tensor/Cuda.h"
#include "tensor/LruCache.h"

namespace cudnn {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

namespace {

thread_local std::string last_forward_path, last_backward_path;

void say(const std::string& line) {
  if (config().verbose) std::fprintf(stderr, "cudnn-nn: %s\n", line.c_str());
}

// The problem's sizes, checked by the nn op's shared checks plus the device rules.
struct Problem {
  int64_t b, h, sq, sk, d, dv, hkv;
  double scale;
  DType dtype;
  tensor::Device device;
};

Problem checked_problem(const std::string& where, const Tensor& q, const Tensor& k, const Tensor& v,
                        const nn::SdpaOptions& o) {
  nn::check_sdpa_arguments(where, q, k, v, o);
  if (!q.is_cuda() || k.device() != q.device() || v.device() != q.device()) {
    throw tensor::Error(where + "expected q, k and v on one CUDA device, got " + q.description() + ", " +
                        k.description() + ", " + v.description());
  }
  const int64_t d = q.size(3);
  const double scale = o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(d));
  return {q.size(0), q.size(1), q.size(2), k.size(2), d, v.size(3), k.size(1), scale, q.dtype(), q.device()};
}

DType acc_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

// The key lengths as int64 on the problem's device (undefined without them).
Tensor lengths_on(const nn::SdpaOptions& o, const Problem& p) {
  if (!o.keyLengths.defined()) return Tensor();
  return o.keyLengths.to(p.device).contiguous();
}

// The dropout mask, drawn as nn::sdpa draws it: Bernoulli(1 - p) from the generator (the same
// stream on both devices), divided by 1 - p, in the data type.
Tensor draw_mask(const nn::SdpaOptions& o, const Problem& p) {
  if (o.dropout <= 0) return Tensor();
  Tensor mask = tensor::empty({p.b, p.h, p.sq, p.sk}, p.dtype, p.device);
  mask.bernoulli_(1 - o.dropout);
  mask.div_(1 - o.dropout);
  return mask;
}

// options.mask as an additive bias (See Note [Attention masks] in nn/Attention.cpp): a
// contiguous [b|1 x h|1 x sq x sk] tensor of `dtype` (the data type for the fused graph, the
// accumulation type for the fallback's kernels), made by one kernel from the mask's broadcast
// view (booleans become 0 / -inf); a mask broadcast along the queries is expanded.
struct Bias {
  Tensor t;
  int64_t b = 0, h = 0;  // 0: no mask
};
Bias bias_of(const nn::SdpaOptions& o, const Problem& p, DType dtype) {
  if (!o.mask.defined()) return {};
  Tensor m = o.mask;
  while (m.dim() < 4) m = m.unsqueeze(0);
  Bias out;
  out.b = m.size(0) == 1 ? 1 : p.b;
  out.h = m.size(1) == 1 ? 1 : p.h;
  out.t = tensor::empty({out.b, out.h, p.sq, p.sk}, dtype, p.device);
  kernels::attention_mask_to_bias(m.expand({out.b, out.h, p.sq, p.sk}), out.t);
  return out;
}

kernels::AttentionRows rows_of(const Problem& p, const Tensor& lengths, bool causal, const Bias& bias = {}) {
  kernels::AttentionRows g;
  g.batch = p.b, g.heads = p.h, g.sq = p.sq, g.sk = p.sk;
  g.causal = causal;
  g.keyLengths = lengths.defined() ? lengths.data<int64_t>() : nullptr;
  g.scale = p.scale;
  if (bias.t.defined()) g.bias = bias.t.raw_data(), g.biasBatch = bias.b, g.biasHeads = bias.h;
  return g;
}

// ---------------------------------------------------------------- fused (cuDNN graph)

// The view cuDNN's engines take: unit stride along the head dimension, 16-byte aligned base
// and strides; otherwise a contiguous copy.
bool engine_takes(const Tensor& t) {
  bool ok = t.stride(3) == 1 && reinterpret_cast<uintptr_t>(t.raw_data()) % 16 == 0;
  for (int i = 0; i < 3 && ok; ++i) ok = t.stride(i) % 8 == 0;
  return ok;
}
Tensor engine_view(const Tensor& t) { return engine_takes(t) ? t : t.contiguous(); }

// Where a path writes a result bound for `dest`: dest itself where the path takes its strides,
// else a packed scratch tensor that finish_into copies over.
Tensor writable(const Tensor& dest, bool fused) {
  const bool ok = fused ? engine_takes(dest) : dest.is_contiguous();
  return ok ? dest : tensor::empty(dest.sizes(), dest.dtype(), dest.device());
}
void finish_into(Tensor dest, const Tensor& written) {
  if (!written.is_same_view(dest)) dest.copy_(written);
}

// A caller's destination: the expected shape, dtype and device.
void check_destination(const std::string& where, const char* what, const Tensor& t, const Shape& shape,
                       const Problem& p) {
  if (t.sizes() != shape || t.dtype() != p.dtype || t.device() != p.device) {
    throw tensor::Error(where + "expected " + what + " " + tensor::shape_str(shape) + " " + tensor::name(p.dtype) +
                        " on " + p.device.str() + ", got " + t.description());
  }
}

struct CachedPlan {
  std::shared_ptr<graph::SdpaPlan> plan;
  std::string why;  // when plan is null
};

// Plans by graph and handle in the one plan cache type (graph_plan.h), bounded by
// conv.cache_limit; a refusal is remembered too, so a refused shape costs one try.
graph::PlanCache<graph::SdpaKey, CachedPlan>& plan_cache() {
  static auto* cache = new graph::PlanCache<graph::SdpaKey, CachedPlan>;  // outlives every plan
  return *cache;
}

void release_attention_caches();  // below

CachedPlan plan_for(const graph::SdpaGraphSpec& spec) {
  tensor::cuda::register_shutdown_hook(&release_attention_caches);
  graph::PlanCache<graph::SdpaKey, CachedPlan>* cache = &plan_cache();
  const graph::SdpaKey key = graph::make_key(spec, handle_serial());
  if (std::optional<CachedPlan> hit = cache->find(key)) return std::move(*hit);
  CachedPlan c;
  c.plan = graph::SdpaPlan::build(spec, handle(), c.why);
  say(std::string("sdpa ") + (spec.backward ? "backward" : "forward") + " [" + std::to_string(spec.b) + " x " +
      std::to_string(spec.h) + (spec.kv_heads() != spec.h ? "/" + std::to_string(spec.kv_heads()) + " kv" : "") +
      " x " + std::to_string(spec.sq) + "/" + std::to_string(spec.sk) + " x " + std::to_string(spec.d) + "]" +
      (spec.biasB > 0 ? " with a mask" : "") + ": " + (c.plan ? c.plan->name() : "fallback, " + c.why));
  cache->put(key, c);
  return c;
}

// Why the fused path is not tried, or "" when it is.
std::string fused_refusal(const Problem& p) {
  if (!config().attention_fused) return "attention.fused=false";
  if (p.dtype != DType::Float16 && p.dtype != DType::BFloat16) {
    return std::string("cuDNN's fused attention takes float16 and bfloat16, not ") + tensor::name(p.dtype);
  }
  if (p.d % 8 != 0 || p.dv % 8 != 0) return "head sizes not multiples of 8";
  if (p.b * p.h * p.sq == 0 || p.sk == 0) return "an empty problem";
  return "";
}

cudnnDataType_t cudnn_type(DType t) { return t == DType::Float16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16; }

// Note [Sequence lengths]: the padding form of the attention graph reads int32 [b] query and
// key lengths. Lengths that are all sq (the queries, always) or all sk (keys without
// keyLengths: the backward's padding form on cuDNN <= 9.15) are the same on every call, so
// they are made once per (device, b, length) and kept, outside a CUDA graph capture (a
// buffer first filled inside one would hold its value only once the graph replays; there
// they are made per call, as the capture's warm-up should have made them already). Only the
// caller's keyLengths are converted per call: one kernel, one buffer; or the caller hands them
// converted already (sdpa_with_int32_lengths: a decode step's layers share the KV cache's one copy,
// made by the first layer, cudnn::MultiheadAttention::attention).
struct LengthsKey {
  int64_t device, b, length;
};
static_assert(sizeof(LengthsKey) == 24);

Tensor lengths_int32(const Tensor& lengths64, const Problem& p) {
  Tensor out = tensor::empty({p.b}, DType::Float32, p.device);  // 4-byte words holding int32
  kernels::lengths_to_int32(lengths64.data<int64_t>(), static_cast<int32_t*>(out.raw_data()), p.b, p.device.index);
  return out;
}

struct LengthsCache {
  std::mutex mutex;
  tensor::LruCache<LengthsKey, Tensor, graph::BytesHash, graph::BytesEqual> lru{64};
};
LengthsCache& lengths_cache() {
  static auto* c = new LengthsCache;  // never destroyed: emptied at shutdown (below)
  return *c;
}

Tensor constant_lengths(const Problem& p, int64_t length) {
  if (tensor::cuda::Graph::capturing(p.device.index)) {
    return lengths_int32(tensor::full({p.b}, double(length), DType::Int64, p.device), p);
  }
  LengthsCache& c = lengths_cache();
  const LengthsKey key{p.device.index, p.b, length};
  std::lock_guard<std::mutex> lock(c.mutex);
  if (const Tensor* hit = c.lru.find(key)) return *hit;
  return c.lru.put(key, lengths_int32(tensor::full({p.b}, double(length), DType::Int64, p.device), p));
}

// The plans and the kept lengths go at shutdown, before the handles they were built with and
// the allocator's blocks (as the convolutions' plans: conv_search.cpp).
void release_attention_caches() {
  plan_cache().clear();
  LengthsCache& c = lengths_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.lru.clear();
}

// int32 [b] buffers: seq_q (all sq) and seq_kv (the caller's int32 key lengths, the key lengths
// converted, or all sk).
std::pair<Tensor, Tensor> sequence_lengths(const Tensor& lengths, const Tensor& lengths32, const Problem& p) {
  if (lengths.defined() && lengths32.defined()) return {constant_lengths(p, p.sq), lengths32};
  return {constant_lengths(p, p.sq), lengths.defined() ? lengths_int32(lengths, p) : constant_lengths(p, p.sk)};
}

// The caller's int32 key lengths where they are usable as seq_kv: [b] 4-byte elements on the
// problem's device, contiguous (undefined: the lengths are converted).
Tensor int32_lengths_on(const Tensor& t, const nn::SdpaOptions& o, const Problem& p) {
  if (!t.defined() || !o.keyLengths.defined()) return Tensor();
  if (t.dim() != 1 || t.numel() != p.b || tensor::itemsize(t.dtype()) != 4 || t.device() != p.device ||
      !t.is_contiguous()) {
    throw tensor::Error("cudnn::sdpa: expected int32 key lengths of " + std::to_string(p.b) + " 4-byte elements on " +
                        p.device.str() + " (keyLengths as int32), got " + t.description());
  }
  return t;
}

// Runs the plan; false (with `why`) where the workspace cannot be had or cuDNN refuses to run.
bool run_plan(const graph::SdpaPlan& plan, std::vector<std::pair<int64_t, void*>> ptrs, float scale, std::string& why) {
  if (plan.workspace() > config().workspace_limit && !config().fastest) {
    why = "its workspace (" + std::to_string(plan.workspace()) + " bytes) exceeds workspace_limit";
    return false;
  }
  Workspace lease;  // Note [Workspaces]: given back once the plan is enqueued
  void* ws = nullptr;
  try {
    // never a null workspace: the engines refuse one (BAD_PARAM_NULL_POINTER) even when they
    // ask for no bytes (measured, cuDNN 9.14)
    ws = lease.grow(std::max<size_t>(plan.workspace(), 16));
  } catch (const tensor::Error& e) {
    why = std::string("no workspace: ") + e.what();
    return false;
  }
  const cudnnStatus_t st = plan.run(handle(), std::move(ptrs), scale, ws);
  if (st != CUDNN_STATUS_SUCCESS) {
    why = std::string("execution refused (") + cudnnGetErrorString(st) + ")";
    return false;
  }
  return true;
}

bool fused_forward(const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths,
                   const Tensor& lengths32, const Tensor& mask, const Bias& bias, const Tensor& out, const Tensor& lse,
                   bool causal, std::string& why) {
  const Tensor qv = engine_view(q), kv = engine_view(k), vv = engine_view(v);
  graph::SdpaGraphSpec s;
  s.data = cudnn_type(p.dtype);
  s.b = p.b, s.h = p.h, s.sq = p.sq, s.sk = p.sk, s.d = p.d, s.dv = p.dv, s.hkv = p.hkv;
  s.biasB = bias.b, s.biasH = bias.h;
  s.q = qv.strides(), s.k = kv.strides(), s.v = vv.strides(), s.o = out.strides();
  s.causal = causal;
  s.padding = lengths.defined();
  s.dropout = mask.defined();
  const CachedPlan c = plan_for(s);
  if (!c.plan) {
    why = c.why;
    return false;
  }
  float scale = static_cast<float>(p.scale);
  std::vector<std::pair<int64_t, void*>> ptrs = {{graph::kQ, qv.raw_data()},
                                                 {graph::kK, kv.raw_data()},
                                                 {graph::kV, vv.raw_data()},
                                                 {graph::kO, out.raw_data()},
                                                 {graph::kStats, lse.raw_data()}};
  std::pair<Tensor, Tensor> seq;
  if (s.padding) {
    seq = sequence_lengths(lengths, lengths32, p);  // See Note [Sequence lengths]
    ptrs.emplace_back(graph::kSeqQ, seq.first.raw_data());
    ptrs.emplace_back(graph::kSeqKv, seq.second.raw_data());
  }
  if (s.dropout) ptrs.emplace_back(graph::kMask, mask.raw_data());
  if (s.biasB > 0) ptrs.emplace_back(graph::kBias, bias.t.raw_data());
  tensor::cuda::DeviceGuard guard(p.device.index);
  if (!run_plan(*c.plan, std::move(ptrs), scale, why)) return false;
  // rows the mask leaves without a key: 0 and -inf, as nn::sdpa (Note [Attention masks])
  if (s.biasB > 0) kernels::attention_dead_rows(rows_of(p, lengths, causal, bias), out, lse);
  why = c.plan->name();
  return true;
}

bool fused_backward(const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                    const Tensor& gradOut, const Tensor& lengths, const nn::SdpaSaved& saved, const Bias& bias,
                    bool causal, const nn::SdpaGrads& g, std::string& why) {
  if (saved.logsumexp.dtype() != DType::Float32) {
    why = "saved statistics are not float32";
    return false;
  }
  const Tensor qv = engine_view(q), kv = engine_view(k), vv = engine_view(v), ov = engine_view(out),
               dov = engine_view(gradOut);
  Tensor lse = saved.logsumexp.contiguous();
  if (bias.b > 0) {  // rows without a key (lse -inf) read +inf: P = 0 there (Note [Attention masks])
    const Tensor stats = tensor::empty(lse.sizes(), DType::Float32, p.device);
    kernels::attention_backward_stats(lse, stats);
    lse = stats;
  }
  graph::SdpaGraphSpec s;
  s.backward = true;
  s.data = cudnn_type(p.dtype);
  s.b = p.b, s.h = p.h, s.sq = p.sq, s.sk = p.sk, s.d = p.d, s.dv = p.dv, s.hkv = p.hkv;
  s.biasB = bias.b, s.biasH = bias.h;
  s.q = qv.strides(), s.k = kv.strides(), s.v = vv.strides(), s.o = ov.strides(), s.dO = dov.strides();
  s.dQ = g.q.strides(), s.dK = g.k.strides(), s.dV = g.v.strides();
  s.causal = causal;
  // cuDNN up to 9.15 needs the padding form when the key count is not a multiple of 128
  // (cudnn-frontend adds it the same way)
  s.padding = lengths.defined() || (runtime_version() <= 91500 && p.sk % 128 != 0);
  s.dropout = saved.dropoutMask.defined();
  const CachedPlan c = plan_for(s);
  if (!c.plan) {
    why = c.why;
    return false;
  }
  float scale = static_cast<float>(p.scale);
  const Tensor row_dot = tensor::empty({p.b, p.h, p.sq}, DType::Float32, p.device);
  // the dQ accumulator starts at zero by itself from cuDNN 9.6 on
  const Tensor dq_accum = runtime_version() < 90600 ? tensor::zeros({p.b, p.h, p.sq, p.d}, DType::Float32, p.device)
                                                    : tensor::empty({p.b, p.h, p.sq, p.d}, DType::Float32, p.device);
  std::vector<std::pair<int64_t, void*>> ptrs = {{graph::kQ, qv.raw_data()},
                                                 {graph::kK, kv.raw_data()},
                                                 {graph::kV, vv.raw_data()},
                                                 {graph::kO, ov.raw_data()},
                                                 {graph::kDO, dov.raw_data()},
                                                 {graph::kStats, lse.raw_data()},
                                                 {graph::kDQ, g.q.raw_data()},
                                                 {graph::kDK, g.k.raw_data()},
                                                 {graph::kDV, g.v.raw_data()},
                                                 {graph::kRowDot, row_dot.raw_data()},
                                                 {graph::kDQAccum, dq_accum.raw_data()}};
  std::pair<Tensor, Tensor> seq;
  if (s.padding) {
    seq = sequence_lengths(lengths, Tensor(), p);
    ptrs.emplace_back(graph::kSeqQ, seq.first.raw_data());
    ptrs.emplace_back(graph::kSeqKv, seq.second.raw_data());
  }
  const Tensor dropout = s.dropout ? saved.dropoutMask.contiguous() : Tensor();
  if (s.dropout) ptrs.emplace_back(graph::kMask, dropout.raw_data());
  if (s.biasB > 0) ptrs.emplace_back(graph::kBias, bias.t.raw_data());
  tensor::cuda::DeviceGuard guard(p.device.index);
  if (!run_plan(*c.plan, std::move(ptrs), scale, why)) return false;
  why = c.plan->name();
  return true;
}

// ---------------------------------------------------------------- fallback (GEMMs + kernels)

BatchedMatrix mat(const Tensor& t, int64_t ld, int64_t stride) { return {t.raw_data(), t.dtype(), ld, stride}; }

// Grouped-query attention on the GEMM path: per-group batched GEMMs, no copy of k or v. The
// G = h / hkv query heads of one kv head are consecutive in the packed q (and in the scores,
// probabilities, out and their gradients), so batch entry (b, kv head) is one GEMM with G * sq
// rows against that kv head's k or v; the products with a transposed left side (dK = dS^T Q,
// dV = P^T dO) then sum over the group by themselves. Without groups G = 1: the plain batch.
void fallback_forward(const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths,
                      const Tensor& mask, const Tensor& out, const Tensor& lse, bool causal, const Bias& bias) {
  const Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  const int64_t n = p.b * p.hkv, rows = p.h / p.hkv * p.sq;  // batch entries, rows of each
  const Tensor scores = tensor::empty({p.b, p.h, p.sq, p.sk}, acc_dtype(p.dtype), p.device);
  gemm_strided_batched(false, true, rows, p.sk, p.d, 1.0, mat(qc, p.d, rows * p.d), mat(kc, p.d, p.sk * p.d), 0.0,
                       mat(scores, p.sk, rows * p.sk), n, p.device.index);
  const Tensor probs = tensor::empty({p.b, p.h, p.sq, p.sk}, p.dtype, p.device);
  kernels::attention_softmax_forward(scores, rows_of(p, lengths, causal, bias), mask, probs, lse);
  gemm_strided_batched(false, false, rows, p.dv, p.sk, 1.0, mat(probs, p.sk, rows * p.sk), mat(vc, p.dv, p.sk * p.dv),
                       0.0, mat(out, p.dv, rows * p.dv), n, p.device.index);
}

void fallback_backward(const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                       const Tensor& gradOut, const Tensor& lengths, const nn::SdpaSaved& saved, const Bias& bias,
                       bool causal, const nn::SdpaGrads& g) {
  const Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous(), oc = out.contiguous(),
               doc = gradOut.contiguous(), lse = saved.logsumexp.contiguous();
  const Tensor mask = saved.dropoutMask.defined() ? saved.dropoutMask.contiguous() : Tensor();
  // batch entries (b, kv head) of G * sq rows each, as fallback_forward
  const int64_t n = p.b * p.hkv, m = p.h / p.hkv * p.sq, dev = p.device.index;
  const kernels::AttentionRows rows = rows_of(p, lengths, causal, bias);
  const DType acc = acc_dtype(p.dtype);
  const Tensor scores = tensor::empty({p.b, p.h, p.sq, p.sk}, acc, p.device);
  gemm_strided_batched(false, true, m, p.sk, p.d, 1.0, mat(qc, p.d, m * p.d), mat(kc, p.d, p.sk * p.d), 0.0,
                       mat(scores, p.sk, m * p.sk), n, dev);
  // dV = (P * mask)^T dO
  const Tensor probs = tensor::empty({p.b, p.h, p.sq, p.sk}, p.dtype, p.device);
  kernels::attention_probs(scores, rows, lse, mask, probs);
  gemm_strided_batched(true, false, p.sk, p.dv, m, 1.0, mat(probs, p.sk, m * p.sk), mat(doc, p.dv, m * p.dv), 0.0,
                       mat(g.v, p.dv, p.sk * p.dv), n, dev);
  // dS = scale * P * (dO V^T * mask - rowsum(dO * O)), into the probabilities' buffer
  const Tensor grad_probs = tensor::empty({p.b, p.h, p.sq, p.sk}, acc, p.device);
  gemm_strided_batched(false, true, m, p.sk, p.dv, 1.0, mat(doc, p.dv, m * p.dv), mat(vc, p.dv, p.sk * p.dv), 0.0,
                       mat(grad_probs, p.sk, m * p.sk), n, dev);
  const Tensor row_dot = tensor::empty({p.b, p.h, p.sq}, acc, p.device);
  kernels::attention_row_dot(doc, oc, row_dot);
  const Tensor& grad_scores = probs;
  kernels::attention_softmax_backward(scores, grad_probs, rows, lse, row_dot, mask, grad_scores);
  // dQ = dS K, dK = dS^T Q
  gemm_strided_batched(false, false, m, p.d, p.sk, 1.0, mat(grad_scores, p.sk, m * p.sk), mat(kc, p.d, p.sk * p.d), 0.0,
                       mat(g.q, p.d, m * p.d), n, dev);
  gemm_strided_batched(true, false, p.sk, p.d, m, 1.0, mat(grad_scores, p.sk, m * p.sk), mat(qc, p.d, m * p.d), 0.0,
                       mat(g.k, p.d, p.sk * p.d), n, dev);
}

}  // namespace

Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const nn::SdpaOptions& options, nn::SdpaSaved* saved,
            const Tensor& into) {
  return sdpa_with_int32_lengths(q, k, v, options, saved, into, Tensor());
}

Tensor sdpa_with_int32_lengths(const Tensor& q, const Tensor& k, const Tensor& v, const nn::SdpaOptions& options,
                               nn::SdpaSaved* saved, const Tensor& into, const Tensor& keyLengths32) {
  const std::string where = "cudnn::sdpa: ";
  const Problem p = checked_problem(where, q, k, v, options);
  const Shape out_shape{p.b, p.h, p.sq, p.dv};
  if (into.defined()) check_destination(where, "out", into, out_shape, p);
  const Tensor lengths = lengths_on(options, p);
  const Tensor mask = draw_mask(options, p);
  const Tensor out = into.defined() ? into : tensor::empty(out_shape, p.dtype, p.device);
  Tensor lse = tensor::empty({p.b, p.h, p.sq}, acc_dtype(p.dtype), p.device);
  std::string why = fused_refusal(p);
  bool done = false;
  if (why.empty()) {
    const Tensor w = writable(out, true);
    done = fused_forward(p, q, k, v, lengths, int32_lengths_on(keyLengths32, options, p), mask,
                         bias_of(options, p, p.dtype), w, lse, options.causal, why);
    if (done) finish_into(out, w);
  }
  if (!done) {
    const Tensor w = writable(out, false);
    fallback_forward(p, q, k, v, lengths, mask, w, lse, options.causal, bias_of(options, p, acc_dtype(p.dtype)));
    finish_into(out, w);
    why = "fallback: " + why;
  }
  last_forward_path = why;
  if (saved) {
    saved->logsumexp = lse;
    saved->dropoutMask = mask;
  }
  return out;
}

nn::SdpaGrads sdpa_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& gradOut,
                            const nn::SdpaOptions& options, const nn::SdpaSaved& saved, const nn::SdpaGrads* into) {
  const std::string where = "cudnn::sdpa_backward: ";
  const Problem p = checked_problem(where, q, k, v, options);
  const Shape out_shape{p.b, p.h, p.sq, p.dv};
  for (const Tensor* t : {&out, &gradOut}) {
    if (t->sizes() != out_shape || t->dtype() != p.dtype || t->device() != p.device) {
      throw tensor::Error(where + "expected out and gradOut " + tensor::shape_str(out_shape) + " " +
                          tensor::name(p.dtype) + " on " + p.device.str() + ", got " + t->description());
    }
  }
  if (saved.logsumexp.sizes() != Shape{p.b, p.h, p.sq} || saved.logsumexp.device() != p.device ||
      saved.logsumexp.dtype() != acc_dtype(p.dtype)) {
    throw tensor::Error(where + "expected the forward's saved logsumexp " + tensor::shape_str({p.b, p.h, p.sq}) + " " +
                        tensor::name(acc_dtype(p.dtype)) + " on " + p.device.str() + ", got " +
                        saved.logsumexp.description() + " (run sdpa forward with these inputs first)");
  }
  if (options.dropout > 0 &&
      (!saved.dropoutMask.defined() || saved.dropoutMask.sizes() != Shape{p.b, p.h, p.sq, p.sk} ||
       saved.dropoutMask.dtype() != p.dtype || saved.dropoutMask.device() != p.device)) {
    throw tensor::Error(where + "expected the forward's dropout mask, got " +
                        (saved.dropoutMask.defined() ? saved.dropoutMask.description() : std::string("none")));
  }
  if (into) {
    check_destination(where, "the q gradient", into->q, q.sizes(), p);
    check_destination(where, "the k gradient", into->k, k.sizes(), p);
    check_destination(where, "the v gradient", into->v, v.sizes(), p);
  }
  const Tensor lengths = lengths_on(options, p);
  nn::SdpaGrads g =
      into ? *into
           : nn::SdpaGrads{tensor::empty(q.sizes(), p.dtype, p.device), tensor::empty(k.sizes(), p.dtype, p.device),
                           tensor::empty(v.sizes(), p.dtype, p.device)};
  if (p.b * p.h == 0) return g;
  if (p.sq == 0 || p.sk == 0) {  // no products: every gradient is zero
    g.q.zero_(), g.k.zero_(), g.v.zero_();
    return g;
  }
  auto writable_grads = [&](bool fused) {
    return nn::SdpaGrads{writable(g.q, fused), writable(g.k, fused), writable(g.v, fused)};
  };
  auto finish = [&](const nn::SdpaGrads& w) { finish_into(g.q, w.q), finish_into(g.k, w.k), finish_into(g.v, w.v); };
  std::string why = fused_refusal(p);
  bool done = false;
  if (why.empty()) {
    const nn::SdpaGrads w = writable_grads(true);
    done =
        fused_backward(p, q, k, v, out, gradOut, lengths, saved, bias_of(options, p, p.dtype), options.causal, w, why);
    if (done) finish(w);
  }
  if (!done) {
    const nn::SdpaGrads w = writable_grads(false);
    fallback_backward(p, q, k, v, out, gradOut, lengths, saved, bias_of(options, p, acc_dtype(p.dtype)), options.causal,
                      w);
    finish(w);
    why = "fallback: " + why;
  }
  last_backward_path = why;
  return g;
}

size_t sdpa_plans_cached() { return plan_cache().size(); }

const std::string& sdpa_last_path(bool backward) { return backward ? last_backward_path : last_forward_path; }

}  // namespace cudnn
