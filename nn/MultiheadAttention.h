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
// The compute goes through four protected hooks (the projections and the attention), which the
// cuDNN twin overrides with cuBLAS and cudnn::sdpa; everything between them is tensor ops.
// Without gradInput (setGradInputNeeded(false)) backward skips the input's gradient GEMM; the
// parameters' gradients still come out of the attention's backward.
// Prints as "nn.MultiheadAttention(64, heads=4, dropout=0.1)". Twin: cudnn.MultiheadAttention.
#pragma once

#include "nn/Attention.h"
#include "nn/Module.h"

namespace nn {

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embedDim, int64_t numHeads, double dropout = 0, bool bias = true, bool batchFirst = false);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  // Needs updateGradInput's pass first (backward() runs both): the projections' gradients
  // come out of the attention's backward.
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  // PyTorch's initialisation: in_proj_weight Xavier-uniform, out_proj.weight U(+-1/sqrt(E)),
  // biases zero.
  void reset();
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

  int64_t embedDim, numHeads;
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
  // backward() under setFreeIntermediateGradients lets go of backward's intermediates after
  // accGradParameters has read them.
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;

  // The input's dtype and device: float32 or float64 of in_proj_weight's dtype and device here;
  // the twin takes CUDA tensors of its four dtypes instead.
  virtual void checkInputType(const std::string& where, const Tensor& input) const;
  // in_proj_weight [3E x E], out_proj.weight [E x E] and the biases, dense (and with
  // `gradients` their gradients): Note [Parameters are checked where they are used] in
  // nn/Buffers.h. checkInput() checks the values; accGradParameters the gradients.
  void checkParameters(const char* method, bool gradients) const;
  // {S, B} of a [S x B x E] / [B x S x E] input; throws naming the shapes.
  std::pair<int64_t, int64_t> checkInput(const Tensor& input, const char* method) const;
  // The attention's options for this call (causal, lengths, dropout in training).
  SdpaOptions attentionOptions() const;

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

 private:
  Tensor memory_, keyLengths_;
  // q, k, v as [B x H x S x D] views of the projections
  Tensor heads(const Tensor& tokens, int64_t S, int64_t B, int64_t part, int64_t parts) const;
};

}  // namespace nn
