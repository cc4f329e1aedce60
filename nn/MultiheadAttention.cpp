// MultiheadAttention.cpp: projections (hooks) -> heads as strided views -> attention (hook) ->
// heads back into token rows -> output projection (hook). Tokens are the input's rows in its
// own order ([S x B] or [B x S]), so no transpose of the input is ever taken.
#include "nn/MultiheadAttention.h"

#include <cmath>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Linear.h"
#include "tensor/Blas.h"

namespace nn {

using tensor::blas::gemm;

MultiheadAttention::MultiheadAttention(int64_t embedDim_, int64_t numHeads_, double dropout_, bool bias,
                                       bool batchFirst_)
    : embedDim(embedDim_), numHeads(numHeads_), dropout(dropout_), batchFirst(batchFirst_) {
  if (embedDim < 1 || numHeads < 1 || embedDim % numHeads != 0) {
    throw Error(std::string(kTypeName) + ": expected embed_dim >= 1 divisible by num_heads >= 1, got embed_dim " +
                std::to_string(embedDim) + " and num_heads " + std::to_string(numHeads));
  }
  if (!(dropout >= 0 && dropout < 1)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected dropout in [0, 1), got " << dropout;
    throw Error(msg.str());
  }
  const int64_t E = embedDim;
  inProjWeight = tensor::empty({3 * E, E});
  gradInProjWeight = tensor::zeros({3 * E, E});
  outProjWeight = tensor::empty({E, E});
  gradOutProjWeight = tensor::zeros({E, E});
  if (bias) {
    inProjBias = tensor::empty({3 * E});
    gradInProjBias = tensor::zeros({3 * E});
    outProjBias = tensor::empty({E});
    gradOutProjBias = tensor::zeros({E});
  }
  reset();
}

void MultiheadAttention::reset() {
  const double E = static_cast<double>(embedDim);
  const double xavier = std::sqrt(6.0 / (E + 3 * E));  // fan_in E, fan_out 3E
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

SdpaOptions MultiheadAttention::attentionOptions() const {
  SdpaOptions o;
  o.causal = causal;
  o.keyLengths = keyLengths_;
  o.dropout = training_ ? dropout : 0;
  return o;
}

void MultiheadAttention::checkInputType(const std::string& where, const Tensor& input) const {
  check_float(where, input);
  check_matches(where, input, inProjWeight);
}

void MultiheadAttention::checkParameters(const char* method, bool gradients) const {
  const int64_t E = embedDim;
  check_parameter(*this, method, "in_proj_weight", inProjWeight, {3 * E, E}, gradients ? &gradInProjWeight : nullptr);
  check_parameter(*this, method, "out_proj.weight", outProjWeight, {E, E}, gradients ? &gradOutProjWeight : nullptr);
  if (inProjBias.defined() || outProjBias.defined()) {
    check_parameter(*this, method, "in_proj_bias", inProjBias, {3 * E}, gradients ? &gradInProjBias : nullptr);
    check_parameter(*this, method, "out_proj.bias", outProjBias, {E}, gradients ? &gradOutProjBias : nullptr);
  }
}

std::pair<int64_t, int64_t> MultiheadAttention::checkInput(const Tensor& input, const char* method) const {
  // public fields, as the constructor takes them: the heads split embed_dim
  if (embedDim < 1 || numHeads < 1 || embedDim % numHeads != 0) {
    throw Error(where(method) + "expected embed_dim >= 1 divisible by num_heads >= 1, got embed_dim " +
                std::to_string(embedDim) + " and num_heads " + std::to_string(numHeads));
  }
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

Tensor MultiheadAttention::heads(const Tensor& tokens, int64_t S, int64_t B, int64_t part, int64_t parts) const {
  const int64_t H = numHeads, D = headDim();
  if (batchFirst) return tokens.view({B, S, parts, H, D}).select(2, part).permute({0, 2, 1, 3});
  return tokens.view({S, B, parts, H, D}).select(2, part).permute({1, 2, 0, 3});
}

const Tensor& MultiheadAttention::updateOutput(const Tensor& input) {
  const auto [S, B] = checkInput(input, "updateOutput");
  const int64_t E = embedDim;
  gradsValid_ = false;
  const Tensor x = input.contiguous().view({S * B, E});
  Tensor q, k, v;
  if (!memory_.defined()) {
    kv_ = Tensor();  // a cross-attention forward's, no longer what backward reads
    linear(x, inProjWeight, inProjBias, qkv_);
    q = heads(qkv_, S, B, 0, 3);
    k = heads(qkv_, S, B, 1, 3);
    v = heads(qkv_, S, B, 2, 3);
  } else {
    const Tensor mem = memory_.to(input.device()).contiguous();
    const int64_t Sk = mem.size(batchFirst ? 1 : 0);
    linear(x, inProjWeight.narrow(0, 0, E), inProjBias.defined() ? inProjBias.narrow(0, 0, E) : Tensor(), qkv_);
    linear(mem.view({Sk * B, E}), inProjWeight.narrow(0, E, 2 * E),
           inProjBias.defined() ? inProjBias.narrow(0, E, 2 * E) : Tensor(), kv_);
    q = heads(qkv_, S, B, 0, 1);
    k = heads(kv_, Sk, B, 0, 2);
    v = heads(kv_, Sk, B, 1, 2);
  }
  savedOptions_ = attentionOptions();
  check_sdpa_arguments(where("updateOutput"), q, k, v, savedOptions_);
  // the attention writes its heads straight into token rows, [S x B x H x D] (or
  // [B x S x H x D]) being [tokens x E]
  ensure(attnTokens_, {S * B, E}, x);
  attn_ = heads(attnTokens_, S, B, 0, 1);
  attention(q, k, v, savedOptions_, saved_, attn_);
  linear(attnTokens_, outProjWeight, outProjBias, output);
  output = output.view(input.sizes());
  return output;
}

const Tensor& MultiheadAttention::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const auto [S, B] = checkInput(input, "updateGradInput");
  const int64_t E = embedDim, H = numHeads, D = headDim();
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
  const Tensor gAttn = batchFirst ? gradAttnTokens_.view({B, S, H, D}).permute({0, 2, 1, 3})
                                  : gradAttnTokens_.view({S, B, H, D}).permute({1, 2, 0, 3});
  Tensor q, k, v;
  if (!memory_.defined()) {
    q = heads(qkv_, S, B, 0, 3);
    k = heads(qkv_, S, B, 1, 3);
    v = heads(qkv_, S, B, 2, 3);
  } else {
    q = heads(qkv_, S, B, 0, 1);
    k = heads(kv_, Sk, B, 0, 2);
    v = heads(kv_, Sk, B, 1, 2);
  }
  // the attention's gradients go straight into the projections' gradient rows
  if (!memory_.defined()) {
    ensure(gradQkv_, {S * B, 3 * E}, gy);
    attentionBackward(q, k, v, attn_, gAttn, savedOptions_, saved_,
                      {heads(gradQkv_, S, B, 0, 3), heads(gradQkv_, S, B, 1, 3), heads(gradQkv_, S, B, 2, 3)});
  } else {
    ensure(gradQkv_, {S * B, E}, gy);
    ensure(gradKv_, {Sk * B, 2 * E}, gy);
    attentionBackward(q, k, v, attn_, gAttn, savedOptions_, saved_,
                      {heads(gradQkv_, S, B, 0, 1), heads(gradKv_, Sk, B, 0, 2), heads(gradKv_, Sk, B, 1, 2)});
    linearGradInput(gradKv_, inProjWeight.narrow(0, E, 2 * E), gradMemory);
    gradMemory = gradMemory.view(memory_.sizes());
  }
  if (gradInputNeeded()) {
    linearGradInput(gradQkv_, memory_.defined() ? inProjWeight.narrow(0, 0, E) : inProjWeight, gradInput);
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

void MultiheadAttention::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const auto [S, B] = checkInput(input, "accGradParameters");
  checkParameters("accGradParameters", true);
  const int64_t E = embedDim;
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
    Tensor gwq = gradInProjWeight.narrow(0, 0, E), gwkv = gradInProjWeight.narrow(0, E, 2 * E);
    Tensor gbq = gradInProjBias.defined() ? gradInProjBias.narrow(0, 0, E) : Tensor();
    Tensor gbkv = gradInProjBias.defined() ? gradInProjBias.narrow(0, E, 2 * E) : Tensor();
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

// ---- printing and configuration ----

std::string MultiheadAttention::str() const {
  std::ostringstream s;
  s << type_name() << "(" << embedDim << ", heads=" << numHeads;
  if (dropout > 0) s << ", dropout=" << dropout;
  if (!inProjBias.defined()) s << ", without bias";
  if (batchFirst) s << ", batch_first";
  if (causal) s << ", causal";
  s << ")";
  return s.str();
}

tensor::Json MultiheadAttention::config() const {
  return tensor::Json::Object{{"embed_dim", embedDim},        {"num_heads", numHeads},     {"dropout", dropout},
                              {"bias", inProjBias.defined()}, {"batch_first", batchFirst}, {"causal", causal}};
}

ModulePtr MultiheadAttention::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t E = c.integer("embed_dim"), H = c.integer("num_heads");
  const double dropout = c.number("dropout", 0.0);
  const bool bias = c.flag("bias", true), batchFirst = c.flag("batch_first", false);
  const bool causal = c.flag("causal", false);
  c.finish();
  auto m = std::make_shared<MultiheadAttention>(E, H, dropout, bias, batchFirst);
  m->causal = causal;
  return m;
}

}  // namespace nn
