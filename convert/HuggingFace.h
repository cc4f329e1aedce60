// HuggingFace.h: Hugging Face transformers' causal language models as saved by save_pretrained,
// to and from nn::DecoderLM (nn/DecoderLM.h):
//   GPT2LMHeadModel   <-> make_gpt2:  transformer.wte / wpe / h.{i}.(ln_1, attn.c_attn, attn.c_proj,
//                                     ln_2, mlp.c_fc, mlp.c_proj) / ln_f, lm_head
//   LlamaForCausalLM  <-> make_llama: model.embed_tokens / layers.{i}.(input_layernorm,
//                                     self_attn.{q,k,v,o}_proj, post_attention_layernorm,
//                                     mlp.{gate,up,down}_proj) / norm, lm_head
// A directory holds config.json and model.safetensors, or shards listed by
// model.safetensors.index.json. See Note [Hugging Face checkpoints] in HuggingFace.cpp for the
// layouts (GPT-2's Conv1D weights are [in x out]; c_attn and Llama's q, k, v projections are
// the rows of in_proj_weight; a tied lm_head is not in the file).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tensor/DType.h"

namespace nn {

class DecoderLM;

struct HFLoadOptions {
  tensor::DType dtype = tensor::DType::Float32;  // the model's parameters (the file's are converted)
};

// Reads `dir`'s config.json and weights into a new nn::DecoderLM (nn backend, on the CPU, in
// evaluation mode). Throws "nn::load_hf_causal_lm: <file>: ..." naming the file and the field
// or tensor for an unknown architecture, an unsupported setting (rope scaling, attention or mlp
// biases in Llama, an activation other than GPT-2's gelu_new or Llama's silu, ...), a missing or
// truncated shard, and every tensor whose name, shape or dtype differs from the config's model:
// all of them are checked before a model is built.
std::shared_ptr<DecoderLM> load_hf_causal_lm(const std::string& dir, const HFLoadOptions& options = {});

struct HFSaveOptions {
  int64_t maxShardBytes = 0;  // > 0: shards of at most this many bytes of tensor data (a larger
                              // tensor alone in one) with model.safetensors.index.json
};

// Writes config.json and model.safetensors (or shards and their index) into `dir` (created if
// needed) so that transformers' from_pretrained loads the model; a model of either backend, on
// any device. Everything is gathered before the first file is written; each file is written
// atomically.
void save_hf_causal_lm(DecoderLM& model, const std::string& dir, const HFSaveOptions& options = {});

}  // namespace nn
