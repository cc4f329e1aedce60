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
// Activation checkpointing (setActivationCheckpointing; torch.utils.checkpoint's semantics): a
// training forward keeps its output alone, and backward runs the forward again from the input it
// is handed, with the generator as the forward found it, before the children's backward; see
// Note [Activation checkpointing] in DecoderBlock.cpp.
// Prints as "nn.DecoderBlock { (ln_1): ... }".
#pragma once

#include "nn/Container.h"
#include "tensor/Generator.h"

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

  // With true, a training-mode forward lets go of every child's forward state and of its own
  // intermediates once its output is computed (its input is the caller's: DecoderLM's blocks
  // keep each other's outputs), and every backward path (backward, updateGradInput,
  // accGradParameters) first recomputes that forward from its input with the default
  // generator's state as the forward found it, so dropout draws the same masks: results are
  // bit-identical to a run without it, for one more forward's compute. An evaluate() forward
  // keeps its activations as without it (generation with a KV cache runs as usual); a training
  // forward with a KV cache attached is an error. A training-time switch, not configuration:
  // config() and model files leave it out (it changes no result, only the memory a step takes,
  // which is the training run's choice, as setFreeIntermediateGradients is); convert() keeps
  // this object (a block has no twin), so it survives there. Off by default.
  void setActivationCheckpointing(bool on) { checkpoint_ = on; }
  bool activationCheckpointing() const { return checkpoint_; }
  // The children's forward state, the block's intermediates and output.
  void releaseActivations() override;

  static constexpr const char* kChildNames[] = {"ln_1", "attn", "ln_2", "mlp"};
  enum Slot : size_t { Ln1, Attn, Ln2, Mlp, kSlots };

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  // ln_1 alone sees the block's input
  bool childSeesInput(size_t i) const override { return i == Ln1; }

 private:
  void checkModules(const char* method) const;
  void checkInput(const Tensor& input, const char* method) const;
  // updateOutput's children and sums (the last sum, into output, with writeOutput)
  void forwardPass(const Tensor& input, bool writeOutput);
  // Checkpointing: the forward's state dropped but for the output / recomputed for backward.
  void releaseForCheckpoint();
  void recompute(const Tensor& input);
  // The children's backward in reverse; the input's gradient into `gradIn`. backwardPass checks,
  // recomputes a checkpointed forward and lets go of it again around childrenBackward.
  void backwardPass(const Tensor& input, const Tensor& gradOutput, double scale, Tensor& gradIn);
  void childrenBackward(const Tensor& input, const Tensor& gradOutput, double scale, Tensor& gradIn);
  // forward: the children's outputs as their forward() handed them back, and the first sum
  Tensor n1_, a_, h_, n2_;
  Tensor gradH_, gradScratch_;
  // Note [Activation checkpointing] in DecoderBlock.cpp
  bool checkpoint_ = false;
  bool released_ = false;        // the last forward was checkpointed: backward recomputes it
  tensor::Generator generator_;  // the default generator as that forward found it
  bool drew_ = false;            // that forward drew random numbers (dropout)
  bool captured_ = false;        // that forward ran inside a CUDA graph capture on its device
  uint64_t captureDraws_ = 0;    // the capture's draws from the default generator before it
};

}  // namespace nn
