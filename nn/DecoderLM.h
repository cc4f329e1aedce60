// DecoderLM.h: a decoder-only language model (GPT-2, Llama) as a container of library modules,
// so convert() swaps each for its twin and Hugging Face checkpoints load by name
// (convert/HuggingFace.h):
//   "wte"     Embedding(V, E)                token embeddings
//   "wpe"     Embedding(n_positions, E)      learned positions (GPT-2 only; Llama rotates q and k)
//   "h"       Sequential of n_layer DecoderBlocks
//   "ln_f"    LayerNorm (GPT-2) or RMSNorm (Llama)
//   "lm_head" Linear(E, V, bias = false), its weight tied to wte.weight or its own
// forward(int64 [B x S] token ids, any device) -> logits [B x S x V]. Token s of row b sits at
// position s, or lengths[b] + s with a KVCache attached (setCache): the position ids are a tensor
// op on the tokens' device. A cached forward is a generation step (eval mode; nn/Generation.h).
// backward(tokens, gradLogits) runs the chain back to the embeddings' gradients; gradInput stays
// undefined (token ids have none).
// make_gpt2 and make_llama build a randomly initialised model of a DecoderLMConfig.
// Prints as "nn.DecoderLM(gpt2, vocab=100, n_embd=32, n_layer=2, n_head=4, tied) { ... }".
#pragma once

#include <memory>

#include "nn/Container.h"

namespace nn {

class ConfigReader;
class DecoderBlock;
class Embedding;
class KVCache;
class Linear;
class Sequential;

enum class DecoderKind { GPT2, Llama };

struct DecoderLMConfig {
  DecoderKind kind = DecoderKind::GPT2;
  int64_t vocabSize = 0;
  int64_t nPositions = 1024;  // GPT-2's n_positions / Llama's max_position_embeddings
  int64_t nEmbd = 0;          // E
  int64_t nLayer = 0;
  int64_t nHead = 0;
  int64_t nKvHead = 0;           // 0: nHead (Llama's num_key_value_heads; GPT-2 has nHead)
  int64_t intermediateSize = 0;  // the mlp's hidden width; 0: 4 E (GPT-2's n_inner = None)
  double normEps = 1e-5;         // layer_norm_epsilon / rms_norm_eps
  double ropeTheta = 10000;      // Llama
  bool tied = true;              // lm_head.weight is wte.weight

  int64_t kvHeads() const { return nKvHead == 0 ? nHead : nKvHead; }
  int64_t headDim() const { return nHead > 0 ? nEmbd / nHead : 0; }
  int64_t hidden() const { return intermediateSize == 0 ? 4 * nEmbd : intermediateSize; }
  // Throws "<where>expected <field> ..., got ..." for a configuration no model can have.
  void check(const std::string& where) const;
  tensor::Json json() const;  // snake_case keys, as DecoderLM::config() writes them
  // The keys json() writes, read back (defaults for the optional ones); `c` is finished by the caller.
  static DecoderLMConfig read(ConfigReader& c);
};

std::string decoder_kind_name(DecoderKind kind);  // "gpt2", "llama"

class DecoderLM : public Container {
 public:
  // A randomly initialised model (the children's own initialisation).
  explicit DecoderLM(const DecoderLMConfig& config);
  // A model of given children (wte, [wpe], h, ln_f, lm_head): model files.
  DecoderLM(const DecoderLMConfig& config, std::vector<ModulePtr> children);

  const Tensor& updateOutput(const Tensor& input) override;
  // Inference: the logits [N x V] of the N flat positions `rows` (int64 [N] on the tokens'
  // device, each b * S + s) of the forward of `tokens`, with ln_f and the head run on those N
  // rows only (a prefill needs each row's last token: B of the B x S). Advances a cache as
  // forward does; leaves no state for a backward.
  const Tensor& forwardRows(const Tensor& tokens, const Tensor& rows);
  // Leaves gradInput undefined (token ids have no gradient), after the children's pass.
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "nn.DecoderLM";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;
  std::string childName(size_t i) const override;

  // Attaches `cache` to every block's attention (block i is layer i) and advances it by S after
  // the last block of each forward; nullptr detaches. The cache must have n_layer layers, the
  // model's kv heads and head size.
  void setCache(std::shared_ptr<KVCache> cache);
  const std::shared_ptr<KVCache>& cache() const { return cache_; }

  // Activation checkpointing (DecoderBlock::setActivationCheckpointing; results unchanged, a
  // training step's activations one block's): on every block, or on block i where blocks[i]
  // (n_layer entries; {true, false, true, false} checkpoints every other block). The getter
  // says, per block, which are.
  void setActivationCheckpointing(bool on);
  void setActivationCheckpointing(const std::vector<bool>& blocks);
  std::vector<bool> activationCheckpointing() const;
  // The children's forward state and the model's own (the position ids, the embeddings' sum).
  void releaseActivations() override;

  const DecoderLMConfig& settings() const { return config_; }
  bool learnedPositions() const { return config_.kind == DecoderKind::GPT2; }
  // The children by role (throw naming the slot when one was replaced by another type).
  Embedding& wte() const;
  Embedding& wpe() const;  // GPT-2 only
  Sequential& blocks() const;
  DecoderBlock& block(int64_t i) const;
  Module& lnF() const;
  Linear& lmHead() const;
  // Ties lm_head.weight to wte.weight (Note [Tied parameters] in nn/Module.cpp) where the config says tied.
  void tieWeights();

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  // the embeddings see the token ids
  bool childSeesInput(size_t i) const override { return i == 0 || (learnedPositions() && i == 1); }

 private:
  size_t slot(const char* name) const;  // the index of child `name` ("wte", "wpe", ...)
  void checkModules(const char* method) const;
  void checkTokens(const Tensor& tokens, const char* method) const;
  void backwardPass(const Tensor& input, const Tensor& gradOutput, double scale);
  // forward through the embeddings and the blocks (advancing a cache): hidden_
  const Tensor& forwardBlocks(const Tensor& input, const char* method);
  const Tensor& forwardChild(size_t i, const Tensor& in);  // modules[i]'s forward, its errors naming it

  DecoderLMConfig config_;
  std::shared_ptr<KVCache> cache_;
  // forward: the position ids, the embeddings' sum, the children's outputs as handed back
  Tensor positions_, x_, hidden_, normed_;
  Tensor rowsOutput_;  // forwardRows' logits
  Tensor steps_;       // 0, 1, ... on the tokens' device, made once (a host copy cannot be captured in a CUDA graph)
};

std::shared_ptr<DecoderLM> make_gpt2(DecoderLMConfig config);   // config.kind set to GPT2
std::shared_ptr<DecoderLM> make_llama(DecoderLMConfig config);  // config.kind set to Llama

}  // namespace nn
