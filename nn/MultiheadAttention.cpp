// MultiheadAttention.cpp: projections (hooks) -> heads as strided views -> attention (hook) ->
// heads back into token rows -> output projection (hook). Tokens are the input's rows in its
// own order ([S x B] or [B x S]), so no transpose of the input is ever taken.
#include "nn/MultiheadAttention.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/KVCache.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Linear.h"
#include "tensor/Blas.h"

namespace nn {

using tensor::blas::gemm;

namespace {

std::string heads_error(int64_t E, int64_t H, int64_t Hkv) {
  std::string msg = "expected embed_dim >= 1 divisible by num_heads >= 1";
  if (Hkv != 0) msg += " and num_kv_heads >= 0 dividing num_heads";
  msg += ", got embed_dim " + std::to_string(E) + " and num_heads " + std::to_string(H);
  if (Hkv != 0) msg += " and num_kv_heads " + std::to_string(Hkv);
  return msg;
}

bool heads_ok(int64_t E, int64_t H, int64_t Hkv) {
  return E >= 1 && H >= 1 && E % H == 0 && Hkv >= 0 && (Hkv == 0 || H % Hkv == 0);
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embedDim_, int64_t numHeads_, double dropout_, bool bias,
                                       bool batchFirst_)
    : MultiheadAttention(MultiheadAttentionOptions{embedDim_, numHeads_, 0, dropout_, bias, batchFirst_, false, {}}) {}

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& o)
    : embedDim(o.embedDim),
      numHeads(o.numHeads),
      numKvHeads(o.numKvHeads),
      rotaryOptions(o.rotary),
      dropout(o.dropout),
      batchFirst(o.batchFirst),
      causal(o.causal) {
  if (!heads_ok(embedDim, numHeads, numKvHeads)) {
    throw Error(std::string(kTypeName) + ": " + heads_error(embedDim, numHeads, numKvHeads));
  }
  if (!(dropout >= 0 && dropout < 1)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected dropout in [0, 1), got " << dropout;
    throw Error(msg.str());
  }
  if (rotaryOptions) {
    // the checks of nn::rotary_embedding_ on a head of this size
    check_rotary_arguments(std::string(kTypeName) + ": ", tensor::empty({0, 1, 0, headDim()}), Tensor(),
                           *rotaryOptions);
  }
  const int64_t E = embedDim, rows = (numHeads + 2 * kvHeads()) * headDim();
  inProjWeight = tensor::empty({rows, E});
  gradInProjWeight = tensor::zeros({rows, E});
  outProjWeight = tensor::empty({E, E});
  gradOutProjWeight = tensor::zeros({E, E});
  if (o.bias) {
    inProjBias = tensor::empty({rows});
    gradInProjBias = tensor::zeros({rows});
    outProjBias = tensor::empty({E});
    gradOutProjBias = tensor::zeros({E});
  }
  reset();
}

void MultiheadAttention::reset() {
  const double E = static_cast<double>(embedDim);
  const double rows = static_cast<double>(inProjWeight.size(0));
  const double xavier = std::sqrt(6.0 / (E + rows));  // fan_in E, fan_out (H + 2 Hkv) D (3E: PyTorch's)
  inProjWeight.uniform_(-xavier, xavier);
  outProjWeight.uniform_(-1 / std::sqrt(E), 1 / std::sqrt(E));
  if (inProjBias.defined()) {
    inProjBias.zero_();
    outProjBias.zero_();
  }
}

void MultiheadAttention::visitState(StateVisitor& v) {
  v.parameter("in_proj_weight", inProjWeight, gradInProjWeight);
  if (inProjBias.defined()) v.parameter("in_proj_bias", inProjBias, gradInProjBias);
  v.parameter("out_proj.weight", outProjWeight, gradOutProjWeight);
  if (outProjBias.defined()) v.parameter("out_proj.bias", outProjBias, gradOutProjBias);
}

void MultiheadAttention::setMemory(const Tensor& memory) {
  memory_ = memory;
  gradMemory = Tensor();
  gradsValid_ = false;
}

void MultiheadAttention::setKeyLengths(const Tensor& lengths) {
  if (lengths.defined() && (lengths.dtype() != tensor::DType::Int64 || lengths.dim() != 1)) {
    throw Error(where("setKeyLengths") + "expected int64 [batch] key lengths, got " + lengths.description());
  }
  keyLengths_ = lengths;
}

void MultiheadAttention::setAttnMask(const Tensor& mask) {
  if (mask.defined() && ((mask.dtype() != tensor::DType::UInt8 && !tensor::is_floating(mask.dtype())) ||
                         mask.dim() < 2 || mask.dim() > 4)) {
    throw Error(where("setAttnMask") +
                "expected a uint8 (nonzero = not allowed) or floating (additive) attn_mask [T x S], [B*H x T x S] or "
                "[B x H x T x S], got " +
                mask.description());
  }
  attnMask_ = mask;
}

void MultiheadAttention::setKeyPaddingMask(const Tensor& mask) {
  if (mask.defined() && (mask.dtype() != tensor::DType::UInt8 || mask.dim() != 2)) {
    throw Error(where("setKeyPaddingMask") + "expected a uint8 key_padding_mask [B x S] (nonzero = ignore), got " +
                mask.description());
  }
  keyPaddingMask_ = mask;
}

void MultiheadAttention::setCache(std::shared_ptr<KVCache> cache, int64_t layer) {
  if (cache && (layer < 0 || layer >= cache->layers())) {
    throw Error(where("setCache") + "expected a layer in [0, " + std::to_string(cache->layers()) + ") of " +
                cache->str() + ", got " + std::to_string(layer));
  }
  cache_ = std::move(cache);
  cacheLayer_ = cache_ ? layer : 0;
  gradsValid_ = false;
}

// Note [MHA masks]
// PyTorch's nn.MultiheadAttention takes attn_mask (True or an additive value per query and key,
// [T x S] or [B*H x T x S]) and key_padding_mask ([B x S], True = ignore), with True meaning
// "not allowed"; sdpa's boolean mask means the opposite (F.scaled_dot_product_attention's
// convention). Each call turns them into one sdpa mask: booleans stay boolean (allowed = both
// say so), and when either is additive both become additive in the data's dtype (a blocked key
// adds -inf: log(1 - blocked)), as PyTorch merges them. A [B*H x T x S] mask is a view
// [B x H x T x S]; a [T x S] mask and the padding mask broadcast. The masks are moved to the
// input's device there, once per call.

SdpaOptions MultiheadAttention::attentionOptions(const char* method, int64_t B, int64_t Sq, int64_t Sk,
                                                 const Tensor& like) const {
  SdpaOptions o;
  o.causal = causal;
  o.keyLengths = keyLengths_;
  o.dropout = training_ ? dropout : 0;
  const int64_t H = numHeads;
  const tensor::DType dt = like.dtype();
  const tensor::Device dev = like.device();
  Tensor a, p;
  if (attnMask_.defined()) {
    const Tensor& m = attnMask_;
    const bool two = m.dim() == 2 && m.sizes() == Shape{Sq, Sk};
    const bool three = m.dim() == 3 && m.sizes() == Shape{B * H, Sq, Sk};
    const bool four = m.dim() == 4 && m.sizes() == Shape{B, H, Sq, Sk};
    if (!two && !three && !four) {
      throw Error(where(method) + "expected attn_mask " + tensor::shape_str({Sq, Sk}) + ", " +
                  tensor::shape_str({B * H, Sq, Sk}) + " or " + tensor::shape_str({B, H, Sq, Sk}) +
                  " (T x S, B*H x T x S, B x H x T x S), got " + tensor::shape_str(m.sizes()));
    }
    a = m.to(dev);
    if (three) a = a.reshape({B, H, Sq, Sk});
  }
  if (keyPaddingMask_.defined()) {
    if (keyPaddingMask_.sizes() != Shape{B, Sk}) {
      throw Error(where(method) + "expected key_padding_mask " + tensor::shape_str({B, Sk}) + " (B x S), got " +
                  tensor::shape_str(keyPaddingMask_.sizes()));
    }
    p = keyPaddingMask_.to(dev).ne(0).view({B, 1, 1, Sk});
  }
  if (!a.defined() && !p.defined()) return o;
  const bool additive = a.defined() && a.dtype() != tensor::DType::UInt8;
  if (!additive) {
    Tensor blocked = a.defined() ? a.ne(0) : p;
    if (a.defined() && p.defined()) blocked = blocked.maximum(p);
    o.mask = blocked.eq(0);
    return o;
  }
  const tensor::DType md = a.dtype() == tensor::DType::Float32 ? a.dtype() : dt;
  o.mask = a.to(md);
  if (p.defined()) o.mask = o.mask.add(p.to(md).neg().add(1).log());  // 0, or -inf where padded
  return o;
}

void MultiheadAttention::checkInputType(const std::string& where, const Tensor& input) const {
  check_float(where, input);
  check_matches(where, input, inProjWeight);
}

void MultiheadAttention::checkHeads(const char* method) const {
  // public fields, as the constructor takes them: the heads split embed_dim
  if (!heads_ok(embedDim, numHeads, numKvHeads))
    throw Error(where(method) + heads_error(embedDim, numHeads, numKvHeads));
}

void MultiheadAttention::checkParameters(const char* method, bool gradients) const {
  const int64_t E = embedDim, rows = (numHeads + 2 * kvHeads()) * headDim();
  check_parameter(*this, method, "in_proj_weight", inProjWeight, {rows, E}, gradients ? &gradInProjWeight : nullptr);
  check_parameter(*this, method, "out_proj.weight", outProjWeight, {E, E}, gradients ? &gradOutProjWeight : nullptr);
  if (inProjBias.defined() || outProjBias.defined()) {
    check_parameter(*this, method, "in_proj_bias", inProjBias, {rows}, gradients ? &gradInProjBias : nullptr);
    check_parameter(*this, method, "out_proj.bias", outProjBias, {E}, gradients ? &gradOutProjBias : nullptr);
  }
}

std::pair<int64_t, int64_t> MultiheadAttention::checkInput(const Tensor& input, const char* method) const {
  checkHeads(method);
  checkParameters(method, false);
  checkInputType(where(method), input);
  const char* layout = batchFirst ? "[B x S x " : "[S x B x ";
  if (input.dim() != 3 || input.size(2) != embedDim) {
    throw Error(where(method) + "expected input " + layout + std::to_string(embedDim) + "], got " +
                tensor::shape_str(input.sizes()));
  }
  const int64_t S = input.size(batchFirst ? 1 : 0), B = input.size(batchFirst ? 0 : 1);
  if (memory_.defined()) {
    const bool ok = memory_.dim() == 3 && memory_.size(2) == embedDim && memory_.size(batchFirst ? 0 : 1) == B &&
                    memory_.dtype() == input.dtype();
    if (!ok) {
      throw Error(where(method) + "expected memory " + layout + std::to_string(embedDim) + "] with batch " +
                  std::to_string(B) + " and dtype " + tensor::name(input.dtype()) + " (input " +
                  tensor::shape_str(input.sizes()) + "), got " + memory_.description());
    }
  }
  return {S, B};
}

Tensor MultiheadAttention::heads(const Tensor& tokens, int64_t S, int64_t B, int64_t first, int64_t n) const {
  const int64_t D = headDim(), cols = tokens.size(1) / D;
  if (batchFirst) return tokens.view({B, S, cols, D}).narrow(2, first, n).permute({0, 2, 1, 3});
  return tokens.view({S, B, cols, D}).narrow(2, first, n).permute({1, 2, 0, 3});
}

void MultiheadAttention::qkvViews(int64_t S, int64_t B, Tensor& q, Tensor& k, Tensor& v) const {
  const int64_t H = numHeads, Hkv = kvHeads();
  q = heads(qkv_, S, B, 0, H);
  if (!kv_.defined()) {
    k = heads(qkv_, S, B, H, Hkv);
    v = heads(qkv_, S, B, H + Hkv, Hkv);
  } else {
    const int64_t Sk = B > 0 ? kv_.size(0) / B : memory_.size(batchFirst ? 1 : 0);
    k = heads(kv_, Sk, B, 0, Hkv);
    v = heads(kv_, Sk, B, Hkv, Hkv);
  }
}

// RoPE on q and k. In self-attention they are heads [0, H) and [H, H + Hkv) of the same token
// rows (`tokens`: qkv_, or gradQkv_ in backward), so one call rotates their joint view, one
// launch fewer on the twin; each element's rotation is the same. Cross-attention's k (tokens
// undefined) is the memory's: one call each.
void MultiheadAttention::rotateQk(const Tensor& tokens, int64_t S, int64_t B, Tensor& q, Tensor& k,
                                  const Tensor& offsets, bool inverse) {
  if (tokens.defined()) {
    Tensor qk = heads(tokens, S, B, 0, numHeads + kvHeads());
    rotary(qk, offsets, *rotaryOptions, inverse);
    return;
  }
  rotary(q, offsets, *rotaryOptions, inverse);
  rotary(k, offsets, *rotaryOptions, inverse);
}

void MultiheadAttention::linearAdding(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& addend,
                                      Tensor& out) {
  linear(x, weight, bias, out);
  out.add_(addend);
}

void MultiheadAttention::outputProjection(const Tensor& input) {
  if (addend_.defined()) {
    linearAdding(attnTokens_, outProjWeight, outProjBias, addend_.view({attnTokens_.size(0), embedDim}), output);
  } else {
    linear(attnTokens_, outProjWeight, outProjBias, output);
  }
  output = output.view(input.sizes());
}

const Tensor& MultiheadAttention::updateOutputAdding(const Tensor& input, const Tensor& addend) {
  checkInput(input, "forwardAdding");
  check_addend(where("forwardAdding"), addend, input.sizes(), input);
  struct Clear {
    Tensor& addend;
    ~Clear() { addend = Tensor(); }
  } clear{addend_};
  addend_ = addend;
  return updateOutput(input);
}

const Tensor& MultiheadAttention::updateOutput(const Tensor& input) {
  const auto [S, B] = checkInput(input, "updateOutput");
  const int64_t E = embedDim, HD = numHeads * headDim(), KD = kvHeads() * headDim();
  gradsValid_ = false;
  cachedForward_ = false;
  if (cache_) return cachedForward(input, S, B);
  const Tensor x = input.contiguous().view({S * B, E});
  if (!memory_.defined()) {
    kv_ = Tensor();  // a cross-attention forward's, no longer what backward reads
    linear(x, inProjWeight, inProjBias, qkv_);
  } else {
    const Tensor mem = memory_.to(input.device()).contiguous();
    const int64_t Sk = mem.size(batchFirst ? 1 : 0);
    linear(x, inProjWeight.narrow(0, 0, HD), inProjBias.defined() ? inProjBias.narrow(0, 0, HD) : Tensor(), qkv_);
    linear(mem.view({Sk * B, E}), inProjWeight.narrow(0, HD, 2 * KD),
           inProjBias.defined() ? inProjBias.narrow(0, HD, 2 * KD) : Tensor(), kv_);
  }
  Tensor q, k, v;
  qkvViews(S, B, q, k, v);
  savedOptions_ = attentionOptions("updateOutput", B, S, k.size(2), x);
  check_sdpa_arguments(where("updateOutput"), q, k, v, savedOptions_);
  if (rotaryOptions) {
    check_rotary_arguments(where("updateOutput"), q, Tensor(), *rotaryOptions);
    rotateQk(memory_.defined() ? Tensor() : qkv_, S, B, q, k, Tensor(), false);
  }
  // the attention writes its heads straight into token rows, [S x B x H x D] (or
  // [B x S x H x D]) being [tokens x E]
  ensure(attnTokens_, {S * B, E}, x);
  attn_ = heads(attnTokens_, S, B, 0, numHeads);
  attention(q, k, v, savedOptions_, saved_, attn_);
  outputProjection(input);
  return output;
}

// Note [Cached attention]
// With a KVCache attached the S new tokens of row b sit at positions lengths[b] + s: RoPE turns
// q and k by those positions (offsets = the cache's device lengths), cacheWrite puts k and v
// there, and the attention reads the cache's first lengths[b] + S keys (keyLengths, computed on
// the device). Causality among the new tokens: one token (decoding) sees every key it is given;
// several after an empty cache (a prefill) are sdpa's top-left causal attention; several after
// cached tokens get a mask j <= lengths[b] + s built with tensor ops on the device. With
// fixedShape the keys are the whole cache, so a decode step's shapes never change and it reads
// no host value (a captured CUDA graph replays it with the new lengths); else a view up to
// max(hostLengths) + S. The cache's lengths do not move here: the model advances them.

const Tensor& MultiheadAttention::cachedForward(const Tensor& input, int64_t S, int64_t B) {
  KVCache& c = *cache_;
  const std::string w = where("updateOutput");
  const int64_t E = embedDim, Hkv = kvHeads(), D = headDim();
  if (training_) {
    throw Error(w + "expected evaluate() mode with a KV cache (cached decoding is inference only), got training mode");
  }
  if (memory_.defined() || attnMask_.defined() || keyPaddingMask_.defined() || keyLengths_.defined()) {
    throw Error(w +
                "expected no memory, attn_mask, key_padding_mask or key lengths with a KV cache (its lengths mask "
                "the keys), got " +
                (memory_.defined()           ? "a memory"
                 : attnMask_.defined()       ? "an attn_mask"
                 : keyPaddingMask_.defined() ? "a key_padding_mask"
                                             : "key lengths"));
  }
  if (c.batch() != B || c.kvHeads() != Hkv || c.headDim() != D || c.dtype() != input.dtype() ||
      c.device() != input.device() || cacheLayer_ >= c.layers()) {
    throw Error(w + "expected a KV cache of batch " + std::to_string(B) + ", kv_heads " + std::to_string(Hkv) +
                ", head_dim " + std::to_string(D) + ", " + tensor::name(input.dtype()) + " on " + input.device().str() +
                " with a layer " + std::to_string(cacheLayer_) + " (input " + input.description() + "), got " +
                c.str());
  }
  const int64_t start = c.maxHostLength();
  if (start + S > c.maxLength()) {
    std::string lengths;
    for (size_t i = 0; i < c.hostLengths().size(); ++i) {
      lengths += (i ? ", " : "") + std::to_string(c.hostLengths()[i]);
    }
    throw Error(w + "expected the cached lengths plus the " + std::to_string(S) + " new tokens within max_length " +
                std::to_string(c.maxLength()) + " of " + c.str() + ", got lengths [" + lengths + "]");
  }
  Tensor& cacheK = c.key(cacheLayer_);
  Tensor& cacheV = c.value(cacheLayer_);
  const int64_t Sk = c.fixedShape() ? c.maxLength() : start + S;
  const Tensor keys = cacheK.narrow(2, 0, Sk), values = cacheV.narrow(2, 0, Sk);
  const Tensor x = input.contiguous().view({S * B, E});
  kv_ = Tensor();
  linear(x, inProjWeight, inProjBias, qkv_);
  Tensor q, k, v;
  qkvViews(S, B, q, k, v);
  SdpaOptions o;
  const Tensor shared = c.keyLengths(S);  // made once for every layer of the step (KVCache::beginStep)
  o.keyLengths = shared.defined() ? shared : c.lengths().add(static_cast<double>(S));
  if (causal && S > 1) {
    const bool prefill = std::all_of(c.hostLengths().begin(), c.hostLengths().end(), [](int64_t l) { return l == 0; });
    if (prefill) {
      o.causal = true;
    } else {  // key j of new token s in row b: j <= lengths[b] + s
      const tensor::Device dev = input.device();
      const Tensor last =
          c.lengths().view({B, 1, 1, 1}).add(tensor::arange(S, tensor::DType::Int64, dev).view({1, 1, S, 1}));
      o.mask = tensor::arange(Sk, tensor::DType::Int64, dev).view({1, 1, 1, Sk}).le(last);
    }
  }
  // the key lengths (in [1, Sk] by the host lengths' check above) are not read back here: a
  // captured step reads no host value (See Note [Cached attention])
  SdpaOptions checked = o;
  checked.keyLengths = Tensor();
  check_sdpa_arguments(w, q, keys, values, checked);
  if (rotaryOptions) check_rotary_arguments(w, q, c.lengths(), *rotaryOptions);
  if (rotaryOptions) {
    rotateQk(qkv_, S, B, q, k, c.lengths(), false);
  }
  cacheWrite(k, v, cacheK, cacheV, c.lengths(), c.hostLengths());
  ensure(attnTokens_, {S * B, E}, x);
  attn_ = heads(attnTokens_, S, B, 0, numHeads);
  savedOptions_ = o;
  attention(q, keys, values, o, saved_, attn_);
  outputProjection(input);
  cachedForward_ = true;
  return output;
}

const Tensor& MultiheadAttention::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const auto [S, B] = checkInput(input, "updateGradInput");
  const int64_t E = embedDim, H = numHeads, Hkv = kvHeads(), D = headDim();
  if (cache_ || cachedForward_) {
    throw Error(where("updateGradInput") +
                "expected a forward without a KV cache (cached decoding has no backward), got " +
                (cache_ ? "a cache attached: " + cache_->str() : std::string("a cached forward")));
  }
  if (!gradOutput.defined() || gradOutput.sizes() != input.sizes() || gradOutput.dtype() != input.dtype()) {
    throw Error(where("updateGradInput") + "expected gradOutput of the input's shape and dtype (" +
                input.description() + "), got " +
                (gradOutput.defined() ? gradOutput.description() : std::string("an undefined tensor")));
  }
  if (!attn_.defined() || attnTokens_.size(0) != S * B || memory_.defined() != kv_.defined()) {
    throw Error(where("updateGradInput") + "expected a forward() of input " + input.description() + " first");
  }
  // what the forward kept is split into its heads and its memory's length: the fields may have
  // changed since
  if (attn_.size(1) != H) {
    throw Error(where("updateGradInput") + "expected num_heads " + std::to_string(attn_.size(1)) +
                " as in the forward, got " + std::to_string(H) + " (num_heads changed between forward and backward)");
  }
  const int64_t kvCols = memory_.defined() ? kv_.size(1) : qkv_.size(1) - H * D;
  if (kvCols != 2 * Hkv * D) {
    throw Error(where("updateGradInput") + "expected num_kv_heads " + std::to_string(kvCols / (2 * D)) +
                " as in the forward, got " + std::to_string(Hkv) +
                " (num_kv_heads changed between forward and backward)");
  }
  // the memory's length (from the memory itself: B may be 0)
  const int64_t Sk = memory_.defined() ? memory_.size(batchFirst ? 1 : 0) : 0;
  if (memory_.defined() && B > 0 && Sk * B != kv_.size(0)) {
    const int64_t was = kv_.size(0) / B;
    throw Error(where("updateGradInput") + "expected the forward's memory " +
                tensor::shape_str(batchFirst ? Shape{B, was, E} : Shape{was, B, E}) + ", got " +
                tensor::shape_str(memory_.sizes()) + " (setMemory() between forward and backward)");
  }
  const Tensor gy = gradOutput.contiguous().view({S * B, E});
  linearGradInput(gy, outProjWeight, gradAttnTokens_);
  const Tensor gAttn = heads(gradAttnTokens_, S, B, 0, H);
  Tensor q, k, v;
  qkvViews(S, B, q, k, v);
  // the attention's gradients go straight into the projections' gradient rows
  Tensor gq, gk, gv;
  if (!memory_.defined()) {
    ensure(gradQkv_, {S * B, qkv_.size(1)}, gy);
    gq = heads(gradQkv_, S, B, 0, H);
    gk = heads(gradQkv_, S, B, H, Hkv);
    gv = heads(gradQkv_, S, B, H + Hkv, Hkv);
  } else {
    ensure(gradQkv_, {S * B, H * D}, gy);
    ensure(gradKv_, {Sk * B, 2 * Hkv * D}, gy);
    gq = heads(gradQkv_, S, B, 0, H);
    gk = heads(gradKv_, Sk, B, 0, Hkv);
    gv = heads(gradKv_, Sk, B, Hkv, Hkv);
  }
  attentionBackward(q, k, v, attn_, gAttn, savedOptions_, saved_, {gq, gk, gv});
  if (rotaryOptions) {  // the rotation's backward: the inverse rotation, in place
    rotateQk(memory_.defined() ? Tensor() : gradQkv_, S, B, gq, gk, Tensor(), true);
  }
  if (memory_.defined()) {
    linearGradInput(gradKv_, inProjWeight.narrow(0, H * D, 2 * Hkv * D), gradMemory);
    gradMemory = gradMemory.view(memory_.sizes());
  }
  if (gradInputNeeded()) {
    linearGradInput(gradQkv_, memory_.defined() ? inProjWeight.narrow(0, 0, H * D) : inProjWeight, gradInput);
    gradInput = gradInput.view(input.sizes());
  } else {
    gradInput = Tensor();
  }
  gradsValid_ = true;
  return gradInput;
}

void MultiheadAttention::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  Module::backwardImpl(input, gradOutput, scale);
  if (freesIntermediateGradients()) {
    gradAttnTokens_ = gradQkv_ = gradKv_ = Tensor();
    gradsValid_ = false;
  }
}

void MultiheadAttention::releaseActivations() {
  Module::releaseActivations();
  qkv_ = kv_ = attnTokens_ = attn_ = Tensor();
  saved_ = SdpaSaved();
  savedOptions_ = SdpaOptions();
  gradAttnTokens_ = gradQkv_ = gradKv_ = Tensor();
  gradsValid_ = false;
}

void MultiheadAttention::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const auto [S, B] = checkInput(input, "accGradParameters");
  checkParameters("accGradParameters", true);
  const int64_t E = embedDim, HD = numHeads * headDim();
  if (!gradsValid_) {
    throw Error(where("accGradParameters") +
                "expected updateGradInput() after the forward first (backward() calls both), got none");
  }
  const Tensor x = input.contiguous().view({S * B, E});
  linearGradParameters(attnTokens_, gradOutput.contiguous().view({S * B, E}), gradOutProjWeight, gradOutProjBias,
                       scale);
  if (!memory_.defined()) {
    linearGradParameters(x, gradQkv_, gradInProjWeight, gradInProjBias, scale);
  } else {
    const Tensor mem = memory_.to(input.device()).contiguous();
    const int64_t rows = gradInProjWeight.size(0);
    Tensor gwq = gradInProjWeight.narrow(0, 0, HD), gwkv = gradInProjWeight.narrow(0, HD, rows - HD);
    Tensor gbq = gradInProjBias.defined() ? gradInProjBias.narrow(0, 0, HD) : Tensor();
    Tensor gbkv = gradInProjBias.defined() ? gradInProjBias.narrow(0, HD, rows - HD) : Tensor();
    linearGradParameters(x, gradQkv_, gwq, gbq, scale);
    linearGradParameters(mem.view({kv_.size(0), E}), gradKv_, gwkv, gbkv, scale);
  }
}

// Note [Attention buffers]
// At a Transformer's sizes the attention's tensors are the module's memory: in the benchmark's
// encoder layer (8192 tokens of 768 in float16) each [tokens x E] tensor is 12 MiB. The
// attention once returned its output [B x H x S x D] and its gradients for q, k and v as new
// tensors that were then copied into token rows: 4 such tensors more than needed, and 4
// copies. The hooks now write where the rows live (the cuDNN engines take the strided views
// as they are), and backward() with setFreeIntermediateGradients drops the gradient rows once
// accGradParameters has used them, as PyTorch's autograd frees them.

// ---- the CPU primitives ----

void MultiheadAttention::linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  const int64_t n = x.size(0), in = x.size(1), outDim = weight.size(0);
  ensure(out, {n, outDim}, x);
  tensor::dispatch_f32_f64(x.dtype(), "nn.MultiheadAttention", [&](auto tag) {
    using T = decltype(tag);
    kernels::linear_forward<T>(x.data<T>(), weight.data<T>(), bias.defined() ? bias.data<T>() : nullptr, out.data<T>(),
                               n, in, outDim);
  });
}

void MultiheadAttention::linearGradInput(const Tensor& gy, const Tensor& weight, Tensor& gradX) {
  const int64_t n = gy.size(0), outDim = weight.size(0), in = weight.size(1);
  ensure(gradX, {n, in}, gy);
  tensor::dispatch_f32_f64(gy.dtype(), "nn.MultiheadAttention", [&](auto tag) {
    using T = decltype(tag);
    gemm<T>(false, false, n, in, outDim, T(1), gy.data<T>(), outDim, weight.data<T>(), in, T(0), gradX.data<T>(), in);
  });
}

void MultiheadAttention::linearGradParameters(const Tensor& x, const Tensor& gy, Tensor& gradWeight, Tensor& gradBias,
                                              double scale) {
  const int64_t n = x.size(0), in = x.size(1), outDim = gy.size(1);
  tensor::dispatch_f32_f64(x.dtype(), "nn.MultiheadAttention", [&](auto tag) {
    using T = decltype(tag);
    const T s = static_cast<T>(scale);
    gemm<T>(true, false, outDim, in, n, s, gy.data<T>(), outDim, x.data<T>(), in, T(1), gradWeight.data<T>(), in);
    if (gradBias.defined()) {
      T* gb = gradBias.data<T>();
      const T* g = gy.data<T>();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < outDim; ++j) gb[j] += s * g[i * outDim + j];
    }
  });
}

void MultiheadAttention::attention(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& options,
                                   SdpaSaved& saved, Tensor out) {
  out.copy_(sdpa(q, k, v, options, &saved));
}

void MultiheadAttention::attentionBackward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                           const Tensor& gradOut, const SdpaOptions& options, const SdpaSaved& saved,
                                           SdpaGrads into) {
  const SdpaGrads g = sdpa_backward(q, k, v, out, gradOut, options, saved);
  into.q.copy_(g.q);
  into.k.copy_(g.k);
  into.v.copy_(g.v);
}

void MultiheadAttention::rotary(Tensor& qOrK, const Tensor& offsets, const RotaryOptions& options, bool inverse) {
  rotary_embedding_(qOrK, offsets, options, inverse);
}

void MultiheadAttention::cacheWrite(const Tensor& k, const Tensor& v, Tensor& cacheK, Tensor& cacheV,
                                    const Tensor& lengths, const std::vector<int64_t>& hostLengths) {
  (void)lengths;
  const int64_t S = k.size(2);
  for (int64_t b = 0; b < k.size(0); ++b) {
    const int64_t at = hostLengths[static_cast<size_t>(b)];
    cacheK.select(0, b).narrow(1, at, S).copy_(k.select(0, b));
    cacheV.select(0, b).narrow(1, at, S).copy_(v.select(0, b));
  }
}

// ---- printing and configuration ----

std::string MultiheadAttention::str() const {
  std::ostringstream s;
  s << type_name() << "(" << embedDim << ", heads=" << numHeads;
  if (numKvHeads != 0 && numKvHeads != numHeads) s << ", kv_heads=" << numKvHeads;
  if (rotaryOptions) {
    s << ", rotary(" << rotary_style_name(rotaryOptions->style) << ", theta=" << rotaryOptions->theta;
    if (rotaryOptions->rotaryDim != 0) s << ", rotary_dim=" << rotaryOptions->rotaryDim;
    s << ")";
  }
  if (dropout > 0) s << ", dropout=" << dropout;
  if (!inProjBias.defined()) s << ", without bias";
  if (batchFirst) s << ", batch_first";
  if (causal) s << ", causal";
  s << ")";
  return s.str();
}

tensor::Json MultiheadAttention::config() const {
  tensor::Json::Object o{{"embed_dim", embedDim},        {"num_heads", numHeads},     {"dropout", dropout},
                         {"bias", inProjBias.defined()}, {"batch_first", batchFirst}, {"causal", causal}};
  if (numKvHeads != 0) o.emplace_back("num_kv_heads", numKvHeads);  // old files have neither key
  if (rotaryOptions) {
    o.emplace_back("rotary", tensor::Json::Object{{"style", std::string(rotary_style_name(rotaryOptions->style))},
                                                  {"theta", rotaryOptions->theta},
                                                  {"rotary_dim", rotaryOptions->rotaryDim}});
  }
  return o;
}

ModulePtr MultiheadAttention::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  MultiheadAttentionOptions o;
  o.embedDim = c.integer("embed_dim");
  o.numHeads = c.integer("num_heads");
  o.numKvHeads = c.integer("num_kv_heads", 0);
  o.dropout = c.number("dropout", 0.0);
  o.bias = c.flag("bias", true);
  o.batchFirst = c.flag("batch_first", false);
  o.causal = c.flag("causal", false);
  if (config.find("rotary")) {
    ConfigReader r = c.object("rotary");
    RotaryOptions ro;
    ro.style = rotary_style_from_name(std::string(kTypeName) + ".fromConfig: ", r.string("style", "half"));
    ro.theta = r.number("theta", 10000);
    ro.rotaryDim = r.integer("rotary_dim", 0);
    r.finish();
    o.rotary = ro;
  }
  c.finish();
  return std::make_shared<MultiheadAttention>(o);
}

}  // namespace nn
