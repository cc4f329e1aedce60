// DecoderBlock.h: one pre-norm block of a decoder-only transformer (GPT-2, Llama) as a container
// of ordinary modules, so convert() swaps each child for its twin:
//   h = x + attn(ln_1(x));  y = h + mlp(ln_2(h))
// children (state paths as GPT-2's Hugging Face modules name them): "ln_1" (LayerNorm or
// RMSNorm), "attn" (an nn::MultiheadAttention with batchFirst and causal; RoPE and grouped
// kv heads through its options), "ln_2", "mlp" (GPT-2: Sequential(Linear E -> 4E, GELU tanh,
// Linear 4E -> E); Llama: SwiGLU). Input and output [B x S x E].
// The block's own compute is two sums (tensor ops), so it runs on whatever device its
// children's outputs are on and has no twin, as Sequential has none. A KVCache attached to
// the attention (DecoderLM::setCache) makes forward a cached decode step (eval only).
// Prints as "nn.DecoderBlock { (ln_1): ... }".
#pragma once

#include "nn/Container.h"

namespace nn {

class MultiheadAttention;

class DecoderBlock : public Container {
 public:
  DecoderBlock(ModulePtr ln1, ModulePtr attn, ModulePtr ln2, ModulePtr mlp);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  // backward() runs the children's backward once; accGradParameters alone runs it too, into
  // scratch (gradInput is left alone): the attention's parameter gradients need its input pass.
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "nn.DecoderBlock";
  std::string type_name() const override { return std::string(kTypeName); }
  // children as config() leaves them out (model files store them apart), in kChildNames' order
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;
  std::string childName(size_t i) const override;

  // The attention child (throws naming the slot when it is not an nn::MultiheadAttention or a twin).
  MultiheadAttention& attn() const;

  static constexpr const char* kChildNames[] = {"ln_1", "attn", "ln_2", "mlp"};
  enum Slot : size_t { Ln1, Attn, Ln2, Mlp, kSlots };

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  // ln_1 alone sees the block's input
  bool childSeesInput(size_t i) const override { return i == Ln1; }

 private:
  void checkModules(const char* method) const;
  void checkInput(const Tensor& input, const char* method) const;
  // The children's backward in reverse; the input's gradient into `gradIn`.
  void backwardPass(const Tensor& input, const Tensor& gradOutput, double scale, Tensor& gradIn);
  // forward: the children's outputs as their forward() handed them back, and the first sum
  Tensor n1_, a_, h_, n2_;
  Tensor gradH_, gradScratch_;
};

}  // namespace nn
