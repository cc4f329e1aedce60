// Attention.cpp: the CPU reference of scaled dot-product attention, one (batch, head) pair at a
// time: two GEMMs around a masked, numerically stable softmax.
#include "nn/Attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "nn/kernels/Parallel.h"
#include "tensor/Blas.h"
#include "tensor/Cuda.h"

namespace nn {

using tensor::Error;
using tensor::Tensor;
using tensor::blas::gemm;

// Note [Attention's saved state]
// Forward keeps what FlashAttention and cuDNN keep: the row log-sum-exp of the masked scores
// (lse_i = log sum_j exp(s_ij)), from which backward recomputes P_ij = exp(s_ij - lse_i)
// without storing the [Sq x Sk] probabilities, and the dropout mask when there is one (the GPU
// op draws the identical mask from the same generator stream, so its backward can read ours
// and the other way round). Masks are never materialised: key j of query i is unmasked when
// j < limit(b, i) = min(keyLengths[b], causal ? i + 1 : Sk), a prefix of the row, never empty
// since keyLengths >= 1 and key 0 is always visible to a causal query. Backward uses
// D_i = sum_j P_ij dP_ij (dP the gradient of the dropped-out probabilities times the mask),
// which equals rowsum(dO * O) and does not need the output to be exact.
//
// Note [Attention masks]
// options.mask joins keyLengths and causal: a boolean (uint8) mask removes key j of query i
// where it is 0, an additive (floating) one is added to scale <q_i, k_j> before the softmax,
// both broadcast to [B x H x Sq x Sk] by the usual right-aligned rule (a view with stride 0 on
// the broadcast dims; nothing is materialised on the CPU). An additive -inf removes the key
// whatever its score (an infinite score there gives no NaN), as a boolean 0 does. With a mask a query row may have
// no key left (every key removed, or an additive -inf on all that remain): such a row is
// defined as PyTorch's safe softmax defines it, probabilities 0, so its output row is 0, its
// logsumexp is -inf and it contributes no gradient (backward takes P = 0 where lse = -inf
// instead of exp(s - lse)). cudnn::sdpa gives the same on both of its paths: its fallback
// kernels by the same rule, the fused graph by rewriting such rows after the engine ran (from
// the mask alone: a row whose every unmasked score is -inf through infinite inputs, not the
// mask, is not rewritten there, and the engine adds the bias, so an infinite score under a
// -inf bias gives NaN there). Grouped-query attention (k, v with Hkv heads, H = G Hkv):
// query head h reads kv head h / G; the backward's gk, gv are the group's gradients summed.

namespace {

std::string shapes(const Tensor& q, const Tensor& k, const Tensor& v) {
  return "q " + tensor::shape_str(q.sizes()) + ", k " + tensor::shape_str(k.sizes()) + ", v " +
         tensor::shape_str(v.sizes());
}

std::vector<int64_t> lengths_of(const SdpaOptions& o, int64_t B, int64_t Sk) {
  if (!o.keyLengths.defined()) return std::vector<int64_t>(static_cast<size_t>(B), Sk);
  return o.keyLengths.cpu().to_vector<int64_t>();
}

inline int64_t limit(int64_t len, bool causal, int64_t i) { return causal ? std::min(len, i + 1) : len; }

// options.mask as a [B x H x Sq x Sk] view (stride 0 where it broadcasts), floating masks in
// the data type T; undefined without one. See Note [Attention masks].
template <class T>
Tensor mask_view(const SdpaOptions& o, int64_t B, int64_t H, int64_t Sq, int64_t Sk) {
  if (!o.mask.defined()) return Tensor();
  Tensor m = o.mask.dtype() == tensor::DType::UInt8 ? o.mask : o.mask.to(tensor::dtype_v<T>);
  while (m.dim() < 4) m = m.unsqueeze(0);
  return m.expand({B, H, Sq, Sk});
}

// Row (b, h, i) of a mask view: where it starts and its stride along the keys.
template <class M>
struct MaskRow {
  const M* p = nullptr;
  int64_t step = 0;
};
template <class M>
MaskRow<M> mask_row(const Tensor& m, int64_t b, int64_t h, int64_t i) {
  if (!m.defined()) return {};
  return {m.data<M>() + b * m.stride(0) + h * m.stride(1) + i * m.stride(2), m.stride(3)};
}

// The scores of row i, s[0, Sk) = scale <q_i, k_j> from the caller's GEMM, masked in place:
// -inf past lim (key lengths, causal), where the boolean mask is 0 and where the additive mask
// is -inf; elsewhere the additive mask added.
template <class T>
void mask_row_scores(T* s, int64_t lim, int64_t Sk, const MaskRow<uint8_t>& keep, const MaskRow<T>& add) {
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  if (keep.p) {
    for (int64_t j = 0; j < lim; ++j) s[j] = keep.p[j * keep.step] ? s[j] : ninf;
  }
  if (add.p) {
    for (int64_t j = 0; j < lim; ++j) {
      const T a = add.p[j * add.step];
      s[j] = a == ninf ? ninf : s[j] + a;  // -inf removes the key, whatever its score
    }
  }
  std::fill(s + lim, s + Sk, ninf);
}

// The softmax of a masked row in place; a row with no key left (max -inf) gives 0 and lse -inf.
template <class T>
void softmax_row(T* s, int64_t Sk, T& lse) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < Sk; ++j) m = (s[j] > m || s[j] != s[j]) ? s[j] : m;  // a NaN wins
  if (m == -std::numeric_limits<T>::infinity()) {
    std::fill(s, s + Sk, T(0));
    lse = m;
    return;
  }
  T sum = 0;
  for (int64_t j = 0; j < Sk; ++j) {
    s[j] = std::exp(s[j] - m);
    sum += s[j];
  }
  const T inv = T(1) / sum;
  for (int64_t j = 0; j < Sk; ++j) s[j] *= inv;
  lse = m + std::log(sum);
}

struct Dims {
  int64_t B, H, Sq, Sk, D, Dv, Hkv;
  int64_t group() const { return H / Hkv; }  // query heads per kv head
};

Dims dims_of(const Tensor& q, const Tensor& k, const Tensor& v) {
  return {q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), v.size(3), k.size(1)};
}

void check_cpu(const std::string& where, const Tensor& q) {
  if (!q.is_cpu())
    throw Error(where + "expected CPU tensors (cudnn::sdpa computes on CUDA devices), got " + q.description());
}

// sdpa_backward's out, gradOut and what sdpa's forward saved, against the sizes of q, k, v
void check_backward_inputs(const std::string& where, const Dims& d, const Tensor& q, const Tensor& out,
                           const Tensor& gradOut, const SdpaOptions& options, const SdpaSaved& saved) {
  const tensor::Shape outShape{d.B, d.H, d.Sq, d.Dv};
  for (const auto* t : {&out, &gradOut}) {
    if (!t->defined() || t->sizes() != outShape || t->dtype() != q.dtype() || t->device() != q.device()) {
      throw Error(where + "expected out and gradOut of " + tensor::shape_str(outShape) + " and q's dtype (" +
                  q.description() + "), got " + (t->defined() ? t->description() : std::string("an undefined tensor")));
    }
  }
  const tensor::Shape lseShape{d.B, d.H, d.Sq};
  if (!saved.logsumexp.defined() || saved.logsumexp.sizes() != lseShape) {
    throw Error(where + "expected saved.logsumexp " + tensor::shape_str(lseShape) + " from sdpa's forward, got " +
                (saved.logsumexp.defined() ? saved.logsumexp.description() : std::string("an undefined tensor")));
  }
  const tensor::Shape maskShape{d.B, d.H, d.Sq, d.Sk};
  if ((options.dropout > 0) != saved.dropoutMask.defined() ||
      (saved.dropoutMask.defined() && saved.dropoutMask.sizes() != maskShape)) {
    throw Error(where + "expected saved.dropoutMask " +
                (options.dropout > 0 ? tensor::shape_str(maskShape) : "undefined") + " (dropout " +
                std::to_string(options.dropout) + "), got " +
                (saved.dropoutMask.defined() ? saved.dropoutMask.description() : std::string("an undefined tensor")));
  }
}

}  // namespace

double sdpa_scale(const SdpaOptions& options, int64_t headDim) {
  return options.scale != 0 ? options.scale : 1.0 / std::sqrt(static_cast<double>(headDim));
}

void check_sdpa_arguments(const std::string& where, const Tensor& q, const Tensor& k, const Tensor& v,
                          const SdpaOptions& options) {
  if (!q.defined() || !k.defined() || !v.defined()) {
    throw Error(where + "expected defined q, k and v, got an undefined " +
                (!q.defined()   ? "q"
                 : !k.defined() ? "k"
                                : "v"));
  }
  if (!tensor::is_floating(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype() || k.device() != q.device() ||
      v.device() != q.device()) {
    throw Error(where + "expected floating q, k and v of one dtype and device, got q " + q.description() + ", k " +
                k.description() + ", v " + v.description());
  }
  const bool agree = q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && k.size(0) == q.size(0) && v.size(0) == q.size(0) &&
                     v.size(1) == k.size(1) && k.size(1) >= 1 && q.size(1) % k.size(1) == 0 && k.size(3) == q.size(3) &&
                     v.size(2) == k.size(2);
  if (!agree) {
    throw Error(where +
                "expected q [B x H x Sq x D], k [B x Hkv x Sk x D] and v [B x Hkv x Sk x Dv] that agree (H a "
                "multiple of Hkv), got " +
                shapes(q, k, v));
  }
  if (q.size(3) < 1 || v.size(3) < 1 || k.size(2) < 1) {
    throw Error(where + "expected D, Dv and Sk >= 1, got " + shapes(q, k, v));
  }
  if (!(options.scale == 0 || (std::isfinite(options.scale) && options.scale > 0))) {
    std::ostringstream msg;
    msg << where << "expected a finite scale > 0 (or 0 for 1/sqrt(D)), got " << options.scale;
    throw Error(msg.str());
  }
  if (!(options.dropout >= 0 && options.dropout < 1)) {
    std::ostringstream msg;
    msg << where << "expected dropout in [0, 1), got " << options.dropout;
    throw Error(msg.str());
  }
  const Tensor& len = options.keyLengths;
  if (len.defined()) {
    const int64_t B = q.size(0), Sk = k.size(2);
    if (len.dtype() != tensor::DType::Int64 || len.dim() != 1 || len.size(0) != B) {
      throw Error(where + "expected keyLengths int64 [" + std::to_string(B) + "] (one per batch entry of " +
                  shapes(q, k, v) + "), got " + len.description());
    }
    // A CUDA graph being captured cannot read device memory back: the values are the caller's
    // to get right then (a decode step's lengths come from a KVCache that checked them).
    const bool capturing = len.device().is_cuda() && tensor::cuda::Graph::capturing(len.device().index);
    const auto values = capturing ? std::vector<int64_t>() : len.cpu().to_vector<int64_t>();
    for (int64_t b = 0; b < static_cast<int64_t>(values.size()); ++b) {
      if (values[b] < 1 || values[b] > Sk) {
        throw Error(where + "expected keyLengths in [1, " + std::to_string(Sk) + "] (Sk of k " +
                    tensor::shape_str(k.sizes()) + "), got " + std::to_string(values[b]) + " at batch entry " +
                    std::to_string(b));
      }
    }
  }
  const Tensor& mask = options.mask;
  if (mask.defined()) {
    const tensor::Shape target{q.size(0), q.size(1), q.size(2), k.size(2)};
    const bool type_ok =
        mask.dtype() == tensor::DType::UInt8 || mask.dtype() == tensor::DType::Float32 || mask.dtype() == q.dtype();
    bool shape_ok = mask.dim() >= 1 && mask.dim() <= 4;
    for (int64_t i = 0; shape_ok && i < mask.dim(); ++i) {
      const int64_t want = target[4 - mask.dim() + i];
      shape_ok = mask.size(i) == want || mask.size(i) == 1;
    }
    if (!type_ok || !shape_ok || mask.device() != q.device()) {
      const std::string additive = q.dtype() == tensor::DType::Float32
                                       ? std::string("float32")
                                       : std::string("float32 or ") + tensor::name(q.dtype());
      throw Error(where + "expected a mask uint8 (boolean) or " + additive + " (additive) on " + q.device().str() +
                  " broadcastable to " + tensor::shape_str(target) + " ([B x H x Sq x Sk] of " + shapes(q, k, v) +
                  "), got " + mask.description());
    }
  }
}

Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& options, SdpaSaved* saved) {
  const std::string where = "nn.sdpa: ";
  check_sdpa_arguments(where, q, k, v, options);
  check_cpu(where, q);
  const Dims d = dims_of(q, k, v);
  const double scale = sdpa_scale(options, d.D);
  Tensor out = tensor::empty({d.B, d.H, d.Sq, d.Dv}, q.dtype());
  Tensor lse = tensor::empty({d.B, d.H, d.Sq}, q.dtype());
  Tensor mask;
  if (options.dropout > 0) {
    mask = tensor::empty({d.B, d.H, d.Sq, d.Sk}, q.dtype()).bernoulli_(1 - options.dropout);
    mask.div_(1 - options.dropout);
  }
  const auto lengths = lengths_of(options, d.B, d.Sk);
  const Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  tensor::dispatch_f32_f64(q.dtype(), "nn.sdpa", [&](auto tag) {
    using T = decltype(tag);
    const Tensor attn = mask_view<T>(options, d.B, d.H, d.Sq, d.Sk);
    const bool boolean = attn.defined() && attn.dtype() == tensor::DType::UInt8;
    const int threads = kernels::batch_threads(d.B * d.H, d.Sq * d.Sk * (d.D + d.Dv));
    std::vector<T> scratch(static_cast<size_t>(threads * d.Sq * d.Sk));
    kernels::parallel_batch(d.B * d.H, threads, [&](int64_t bh, int tid) {
      const int64_t b = bh / d.H, h = bh % d.H, kvh = b * d.Hkv + h / d.group();  // See Note [Attention masks]
      T* s = scratch.data() + tid * d.Sq * d.Sk;
      gemm<T>(false, true, d.Sq, d.Sk, d.D, static_cast<T>(scale), qc.data<T>() + bh * d.Sq * d.D, d.D,
              kc.data<T>() + kvh * d.Sk * d.D, d.D, T(0), s, d.Sk);
      T* l = lse.data<T>() + bh * d.Sq;
      for (int64_t i = 0; i < d.Sq; ++i) {
        mask_row_scores(s + i * d.Sk, limit(lengths[b], options.causal, i), d.Sk,
                        boolean ? mask_row<uint8_t>(attn, b, h, i) : MaskRow<uint8_t>{},
                        boolean ? MaskRow<T>{} : mask_row<T>(attn, b, h, i));
        softmax_row(s + i * d.Sk, d.Sk, l[i]);
      }
      if (mask.defined()) {
        const T* mk = mask.data<T>() + bh * d.Sq * d.Sk;
        for (int64_t e = 0; e < d.Sq * d.Sk; ++e) s[e] *= mk[e];
      }
      gemm<T>(false, false, d.Sq, d.Dv, d.Sk, T(1), s, d.Sk, vc.data<T>() + kvh * d.Sk * d.Dv, d.Dv, T(0),
              out.data<T>() + bh * d.Sq * d.Dv, d.Dv);
    });
  });
  if (saved) {
    saved->logsumexp = lse;
    saved->dropoutMask = mask;
  }
  return out;
}

SdpaGrads sdpa_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& gradOut,
                        const SdpaOptions& options, const SdpaSaved& saved) {
  const std::string where = "nn.sdpa_backward: ";
  check_sdpa_arguments(where, q, k, v, options);
  check_cpu(where, q);
  const Dims d = dims_of(q, k, v);
  check_backward_inputs(where, d, q, out, gradOut, options, saved);
  const double scale = sdpa_scale(options, d.D);
  const auto lengths = lengths_of(options, d.B, d.Sk);
  const Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous(), go = gradOut.contiguous();
  const Tensor lse = saved.logsumexp.to(q.dtype()).contiguous();
  const Tensor mask = saved.dropoutMask.defined() ? saved.dropoutMask.to(q.dtype()).contiguous() : Tensor();
  SdpaGrads g{tensor::empty(q.sizes(), q.dtype()), tensor::empty(k.sizes(), q.dtype()),
              tensor::empty(v.sizes(), q.dtype())};
  // grouped-query attention: every query head's gk, gv first, then the groups' sums
  const bool grouped = d.group() > 1;
  const Tensor gk = grouped ? tensor::empty({d.B, d.H, d.Sk, d.D}, q.dtype()) : g.k;
  const Tensor gv = grouped ? tensor::empty({d.B, d.H, d.Sk, d.Dv}, q.dtype()) : g.v;
  tensor::dispatch_f32_f64(q.dtype(), "nn.sdpa_backward", [&](auto tag) {
    using T = decltype(tag);
    const Tensor attn = mask_view<T>(options, d.B, d.H, d.Sq, d.Sk);
    const bool boolean = attn.defined() && attn.dtype() == tensor::DType::UInt8;
    const int64_t n = d.Sq * d.Sk;
    const int threads = kernels::batch_threads(d.B * d.H, n * (2 * d.D + 2 * d.Dv));
    std::vector<T> scratch(static_cast<size_t>(threads * 2 * n));
    kernels::parallel_batch(d.B * d.H, threads, [&](int64_t bh, int tid) {
      const int64_t b = bh / d.H, h = bh % d.H, kvh = b * d.Hkv + h / d.group();
      T* p = scratch.data() + tid * 2 * n;  // P, then dS
      T* dp = p + n;                        // dP (dropped out), then the dropped-out P
      const T* qp = qc.data<T>() + bh * d.Sq * d.D;
      const T* kp = kc.data<T>() + kvh * d.Sk * d.D;
      const T* vp = vc.data<T>() + kvh * d.Sk * d.Dv;
      const T* gop = go.data<T>() + bh * d.Sq * d.Dv;
      const T* l = lse.data<T>() + bh * d.Sq;
      const T* mk = mask.defined() ? mask.data<T>() + bh * n : nullptr;
      gemm<T>(false, true, d.Sq, d.Sk, d.D, static_cast<T>(scale), qp, d.D, kp, d.D, T(0), p, d.Sk);
      for (int64_t i = 0; i < d.Sq; ++i) {
        T* row = p + i * d.Sk;
        mask_row_scores(row, limit(lengths[b], options.causal, i), d.Sk,
                        boolean ? mask_row<uint8_t>(attn, b, h, i) : MaskRow<uint8_t>{},
                        boolean ? MaskRow<T>{} : mask_row<T>(attn, b, h, i));
        if (l[i] == -std::numeric_limits<T>::infinity()) {  // no key left: P = 0 (Note [Attention masks])
          std::fill(row, row + d.Sk, T(0));
          continue;
        }
        for (int64_t j = 0; j < d.Sk; ++j) row[j] = std::exp(row[j] - l[i]);
      }
      // dV = (P mask)^T dO
      const T* pd = p;
      if (mk) {
        for (int64_t e = 0; e < n; ++e) dp[e] = p[e] * mk[e];
        pd = dp;
      }
      gemm<T>(true, false, d.Sk, d.Dv, d.Sq, T(1), pd, d.Sk, gop, d.Dv, T(0), gv.data<T>() + bh * d.Sk * d.Dv, d.Dv);
      // dP = (dO V^T) mask; dS = P (dP - D_i)
      gemm<T>(false, true, d.Sq, d.Sk, d.Dv, T(1), gop, d.Dv, vp, d.Dv, T(0), dp, d.Sk);
      for (int64_t i = 0; i < d.Sq; ++i) {
        T* prow = p + i * d.Sk;
        T* drow = dp + i * d.Sk;
        if (mk) {
          for (int64_t j = 0; j < d.Sk; ++j) drow[j] *= mk[i * d.Sk + j];
        }
        T di = 0;
        for (int64_t j = 0; j < d.Sk; ++j) di += prow[j] * drow[j];
        for (int64_t j = 0; j < d.Sk; ++j) prow[j] = prow[j] * (drow[j] - di);
      }
      gemm<T>(false, false, d.Sq, d.D, d.Sk, static_cast<T>(scale), p, d.Sk, kp, d.D, T(0),
              g.q.data<T>() + bh * d.Sq * d.D, d.D);
      gemm<T>(true, false, d.Sk, d.D, d.Sq, static_cast<T>(scale), p, d.Sk, qp, d.D, T(0),
              gk.data<T>() + bh * d.Sk * d.D, d.D);
    });
  });
  if (grouped) {
    g.k.copy_(gk.view({d.B, d.Hkv, d.group(), d.Sk, d.D}).sum(2));
    g.v.copy_(gv.view({d.B, d.Hkv, d.group(), d.Sk, d.Dv}).sum(2));
  }
  return g;
}

}  // namespace nn
