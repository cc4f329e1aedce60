// MultiheadAttention.h: PyTorch's nn.MultiheadAttention (Vaswani et al. 2017) with its
// parameter names and layouts, so a PyTorch state_dict loads as saved:
//   in_proj_weight [3E x E] (the q, k, v projections stacked), in_proj_bias [3E],
//   out_proj.weight [E x E], out_proj.bias [E] (the biases only with bias = true).
// Input [S x B x E] (batchFirst: [B x S x E]); output the same shape. Heads split E into
// numHeads x E/numHeads, and attention is nn::sdpa (scale 1/sqrt(E/numHeads)), with dropout
// on the attention probabilities in training.
// - Self-attention: forward(x) uses x for queries, keys and values.
// - Cross-attention: setMemory(m) with m [Sk x B x E] ([B x Sk x E] with batchFirst) takes the
//   keys and values from m (the first E rows of in_proj_* project queries, the rest keys and
//   values, as PyTorch's); backward() then also leaves m's gradient in gradMemory. A memory
//   stays until setMemory(Tensor()).
// - causal (PyTorch's is_causal): query i attends to keys j <= i.
// - setKeyLengths(int64 [B]): batch b attends to its first lengths[b] keys (PyTorch's
//   key_padding_mask with True from lengths[b] on); Tensor() clears it.
// The compute goes through protected hooks (the projections, the attention, RoPE and the cache
// write), which the cuDNN twin overrides with cuBLAS, cudnn::sdpa, cudnn::rotary_embedding_ and
// a kernel; everything between them is tensor ops.
// Without gradInput (setGradInputNeeded(false)) backward skips the input's gradient GEMM; the
// parameters' gradients still come out of the attention's backward.
// Prints as "nn.MultiheadAttention(64, heads=4, dropout=0.1)". Twin: cudnn.MultiheadAttention.
// Decoder language models (MultiheadAttentionOptions; the positional constructor is PyTorch's):
// - numKvHeads (grouped-query / multi-query attention): k and v have Hkv heads, Hkv dividing H;
//   in_proj_weight [(H + 2 Hkv) D x E] (q rows, then k rows, then v rows), in_proj_bias
//   [(H + 2 Hkv) D]; query head h reads kv head h / (H / Hkv). Hkv = H is PyTorch's module.
// - rotary (the field rotaryOptions): RoPE (nn/Rotary.h) on q and k, in place on their head views of the projection
//   buffer; backward turns their gradients back the same way (the inverse rotation).
// - setAttnMask: PyTorch's attn_mask (uint8 = bool, nonzero = NOT allowed, or additive float),
//   [T x S], [B*H x T x S] or [B x H x T x S]; setKeyPaddingMask: uint8 [B x S], nonzero =
//   ignore that key. Both are turned into sdpa's mask once per call (Note [MHA masks]).
// - setCache(cache, layer): a cached forward for decoding (evaluate() mode only; see nn/KVCache.h
//   and Note [Cached attention] in MultiheadAttention.cpp).
#pragma once

#include <memory>
#include <optional>

#include "nn/Attention.h"
#include "nn/Module.h"
#include "nn/Rotary.h"

namespace nn {

class KVCache;

struct MultiheadAttentionOptions {
  int64_t embedDim = 0, numHeads = 0;
  int64_t numKvHeads = 0;  // 0 = numHeads; must divide numHeads
  double dropout = 0;
  bool bias = true;  // in_proj_bias and out_proj.bias
  bool batchFirst = false;
  bool causal = false;
  std::optional<RotaryOptions> rotary;  // RoPE on q and k after the projection
};

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embedDim, int64_t numHeads, double dropout = 0, bool bias = true, bool batchFirst = false);
  explicit MultiheadAttention(const MultiheadAttentionOptions& options);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  // Needs updateGradInput's pass first (backward() runs both): the projections' gradients
  // come out of the attention's backward.
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  // The attention + addend, the addend added after the output projection (Note [Sums in the
  // product's epilogue] in nn/Module.cpp); addend of the input's shape.
  bool addsInForward() const override { return true; }
  const Tensor& updateOutputAdding(const Tensor& input, const Tensor& addend) override;
  // PyTorch's initialisation: in_proj_weight Xavier-uniform, out_proj.weight U(+-1/sqrt(E)),
  // biases zero.
  void reset();
  // The projections, the attention output, sdpa's saved state (its dropout mask included), the
  // call's options and backward's intermediates (Module::releaseActivations); the twin's too.
  void releaseActivations() override;
  static constexpr std::string_view kTypeName = "nn.MultiheadAttention";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  // Cross-attention's keys and values (see above); Tensor() returns to self-attention.
  void setMemory(const Tensor& memory);
  const Tensor& memory() const { return memory_; }
  // int64 [B] (any device), each in [1, key length]; Tensor() clears.
  void setKeyLengths(const Tensor& lengths);
  const Tensor& keyLengths() const { return keyLengths_; }
  int64_t headDim() const { return embedDim / numHeads; }
  // The kv heads in effect: numKvHeads, or numHeads for 0.
  int64_t kvHeads() const { return numKvHeads > 0 ? numKvHeads : numHeads; }

  // PyTorch's attn_mask and key_padding_mask (see above); Tensor() clears. Checked here for
  // dtype and rank, against the input's shapes on every pass.
  void setAttnMask(const Tensor& mask);
  const Tensor& attnMask() const { return attnMask_; }
  void setKeyPaddingMask(const Tensor& mask);
  const Tensor& keyPaddingMask() const { return keyPaddingMask_; }
  // The cache this layer reads and writes as its `layer`; nullptr detaches.
  void setCache(std::shared_ptr<KVCache> cache, int64_t layer);
  const std::shared_ptr<KVCache>& cache() const { return cache_; }
  int64_t cacheLayer() const { return cacheLayer_; }

  int64_t embedDim, numHeads;
  int64_t numKvHeads = 0;                      // 0 = numHeads
  std::optional<RotaryOptions> rotaryOptions;  // RoPE on q and k (MultiheadAttentionOptions::rotary)
  double dropout;
  bool batchFirst;
  bool causal = false;
  Tensor inProjWeight, inProjBias, outProjWeight, outProjBias;
  Tensor gradInProjWeight, gradInProjBias, gradOutProjWeight, gradOutProjBias;
  Tensor gradMemory;  // after backward() with a memory: its gradient, the memory's shape

 protected:
  void visitState(StateVisitor& v) override;
  bool parametersNeedGradInput() const override { return true; }

  // ---- the primitives a twin overrides; arguments are checked, 2-d and contiguous ----
  // out = x weight^T + bias (bias may be undefined): x [n x in], weight [out x in] (a row block
  // of in_proj_weight is a contiguous view), out [n x out], allocated by the hook (nn::ensure).
  virtual void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out);
  // out = x weight^T + bias + addend (addend [n x out], not overlapping out): linear, then the sum
  // here; the twin adds it in the product's epilogue where it can.
  virtual void linearAdding(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& addend,
                            Tensor& out);
  // gradX = gy weight (written), gy [n x out]
  virtual void linearGradInput(const Tensor& gy, const Tensor& weight, Tensor& gradX);
  // gradWeight += scale gy^T x, gradBias += scale sum_rows gy (gradBias may be undefined)
  virtual void linearGradParameters(const Tensor& x, const Tensor& gy, Tensor& gradWeight, Tensor& gradBias,
                                    double scale);
  // nn::sdpa and nn::sdpa_backward by default; q, k, v are strided views [B x H x S x D].
  // The results go where the module keeps them, so no second copy exists (Note [Attention
  // buffers] in MultiheadAttention.cpp): `out` is a [B x H x Sq x D] view of the attention's
  // token rows, `into` views of the projections' gradient rows.
  virtual void attention(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& options,
                         SdpaSaved& saved, Tensor out);
  virtual void attentionBackward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                 const Tensor& gradOut, const SdpaOptions& options, const SdpaSaved& saved,
                                 SdpaGrads into);
  // RoPE in place on a q or k head view [B x h x S x D] (nn::rotary_embedding_ here,
  // cudnn::rotary_embedding_ in the twin); inverse: the backward's rotation of a gradient.
  virtual void rotary(Tensor& qOrK, const Tensor& offsets, const RotaryOptions& options, bool inverse);
  // Writes k, v [B x Hkv x S x D] into the cache's cacheK, cacheV [B x Hkv x maxLength x D] at
  // positions lengths[b] + s of row b. Here with tensor ops per row from hostLengths; the twin
  // with one kernel reading `lengths` (int64 [B], the cache's device), so a captured step replays.
  virtual void cacheWrite(const Tensor& k, const Tensor& v, Tensor& cacheK, Tensor& cacheV, const Tensor& lengths,
                          const std::vector<int64_t>& hostLengths);
  // backward() under setFreeIntermediateGradients lets go of backward's intermediates after
  // accGradParameters has read them.
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;

  // The input's dtype and device: float32 or float64 of in_proj_weight's dtype and device here;
  // the twin takes CUDA tensors of its four dtypes instead.
  virtual void checkInputType(const std::string& where, const Tensor& input) const;
  // in_proj_weight [(H + 2 Hkv) D x E], out_proj.weight [E x E] and the biases, dense (and with
  // `gradients` their gradients): Note [Parameters are checked where they are used] in
  // nn/Buffers.h. checkInput() checks the values; accGradParameters the gradients.
  void checkParameters(const char* method, bool gradients) const;
  // {S, B} of a [S x B x E] / [B x S x E] input; throws naming the shapes.
  std::pair<int64_t, int64_t> checkInput(const Tensor& input, const char* method) const;
  // The attention's options for this call (causal, lengths, the masks turned into sdpa's for
  // B x Sq queries over Sk keys, dropout in training); throws naming a mask of the wrong shape.
  SdpaOptions attentionOptions(const char* method, int64_t B, int64_t Sq, int64_t Sk, const Tensor& like) const;

  // What forward keeps for backward: the projections (tokens in the input's order, one row per
  // token), the attention output (its token rows, and the [B x H x Sq x D] view of them that
  // the attention wrote), sdpa's saved state.
  Tensor qkv_;         // self-attention: [tokens x 3E]; cross-attention: q [tokens x E]
  Tensor kv_;          // cross-attention: [memory tokens x 2E]
  Tensor attnTokens_;  // [tokens x E]
  Tensor attn_;        // [B x H x Sq x D], a view of attnTokens_
  SdpaSaved saved_;
  SdpaOptions savedOptions_;
  // backward's intermediates, for accGradParameters
  Tensor gradAttnTokens_, gradQkv_, gradKv_;
  bool gradsValid_ = false;
  bool cachedForward_ = false;  // the last forward went through the cache: no backward

 private:
  Tensor memory_, keyLengths_, attnMask_, keyPaddingMask_;
  std::shared_ptr<KVCache> cache_;
  int64_t cacheLayer_ = 0;
  // Heads [first, first + n) of D columns each of token rows [S*B x cols], as [B x n x S x D].
  Tensor heads(const Tensor& tokens, int64_t S, int64_t B, int64_t first, int64_t n) const;
  // q, k, v of the kept projections (self- or cross-attention)
  void qkvViews(int64_t S, int64_t B, Tensor& q, Tensor& k, Tensor& v) const;
  void checkHeads(const char* method) const;
  const Tensor& cachedForward(const Tensor& input, int64_t S, int64_t B);
  // RoPE on q and k, one call on their joint heads of `tokens` where defined (rotateQk's note).
  void rotateQk(const Tensor& tokens, int64_t S, int64_t B, Tensor& q, Tensor& k, const Tensor& offsets, bool inverse);
  // The output projection of attnTokens_ into output (+ addend_ where defined), viewed as input.
  void outputProjection(const Tensor& input);
  Tensor addend_;  // forwardAdding's addend, during its forward alone
};

}  // namespace nn
