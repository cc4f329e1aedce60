// CheckpointedLM.h: what the activation-checkpointing suites of both backends share: small
// GPT-2 and Llama models with dropout in their blocks, one training step's results read back
// exactly, and the bit-for-bit comparison of two such steps.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/DecoderBlock.h"
#include "nn/DecoderLM.h"
#include "nn/Dropout.h"
#include "nn/MultiheadAttention.h"
#include "nn/Sequential.h"
#include "tensor/Generator.h"

namespace testing {

inline nn::DecoderLMConfig checkpoint_config(nn::DecoderKind kind, int64_t layers = 3) {
  nn::DecoderLMConfig c;
  c.kind = kind;
  c.vocabSize = 29;
  c.nPositions = 32;
  c.nEmbd = 16;
  c.nLayer = layers;
  c.nHead = 4;
  c.nKvHead = kind == nn::DecoderKind::Llama ? 2 : 0;
  c.intermediateSize = kind == nn::DecoderKind::Llama ? 24 : 0;
  c.ropeTheta = 100;
  return c;
}

// Dropout p in every block: on the attention probabilities and after the mlp's activation
// (GPT-2: Linear, GELU, Dropout, Linear) or after the whole mlp (Llama: Sequential(SwiGLU,
// Dropout)), so the recompute must draw masks inside the attention, inside a Sequential and in
// a module of its own.
inline void add_dropout(nn::DecoderLM& lm, double p) {
  for (int64_t i = 0; i < lm.settings().nLayer; ++i) {
    nn::DecoderBlock& b = lm.block(i);
    b.attn().dropout = p;
    nn::ModulePtr& mlp = b.modules[nn::DecoderBlock::Mlp];
    if (auto* seq = dynamic_cast<nn::Sequential*>(mlp.get()); seq && lm.settings().kind == nn::DecoderKind::GPT2) {
      seq->modules.insert(seq->modules.begin() + 2, std::make_shared<nn::Dropout>(p));
    } else {
      mlp =
          std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{mlp, std::make_shared<nn::Dropout>(p)});
    }
  }
}

inline std::shared_ptr<nn::DecoderLM> make_checkpoint_model(nn::DecoderKind kind, uint64_t seed, double dropout,
                                                            int64_t layers = 3) {
  tensor::manual_seed(seed);
  auto lm = kind == nn::DecoderKind::GPT2 ? nn::make_gpt2(checkpoint_config(kind, layers))
                                          : nn::make_llama(checkpoint_config(kind, layers));
  if (dropout > 0) add_dropout(*lm, dropout);
  lm->train();
  return lm;
}

// Token ids [B x S] and a gradient for the logits, drawn from their own generator (so the
// default generator is the model's alone), on `device`, the gradient in `dtype`.
inline std::pair<tensor::Tensor, tensor::Tensor> checkpoint_batch(const nn::DecoderLM& lm, int64_t B, int64_t S,
                                                                  tensor::DType dtype, tensor::Device device) {
  tensor::Generator gen(71);
  std::vector<int64_t> ids(static_cast<size_t>(B * S));
  for (auto& id : ids) id = gen.randint(lm.settings().vocabSize);
  const tensor::Tensor tokens = tensor::from_vector(ids, {B, S}).to(device);
  const tensor::Tensor grad = tensor::uniform({B, S, lm.settings().vocabSize}, -1, 1, gen, dtype, device);
  return {tokens, grad};
}

// One step's results, exactly (float64 holds every float32 and 16-bit value).
struct LMStep {
  std::vector<double> logits;
  std::map<std::string, std::vector<double>> grads;  // every parameter's, by path
  std::vector<double> embeddingGrad;                 // the blocks' input gradient (the embeddings' sum's)
  uint64_t offset = 0;                               // the default generator's after the step
};

// forward, backward (zeroed gradients first); the generator as the caller left it.
inline LMStep lm_step(nn::DecoderLM& lm, const tensor::Tensor& tokens, const tensor::Tensor& gradLogits) {
  LMStep s;
  lm.zeroGradParameters();
  s.logits = lm.forward(tokens).to_vector<double>();
  lm.backward(tokens, gradLogits);
  for (const auto& [name, g] : lm.namedGradParameters()) s.grads[name] = g.to_vector<double>();
  const tensor::Tensor& ge = lm.blocks().gradInput;
  if (ge.defined()) s.embeddingGrad = ge.to_vector<double>();
  s.offset = tensor::default_generator().offset();
  return s;
}

// Two steps from one seed.
inline std::vector<LMStep> lm_steps(nn::DecoderLM& lm, const tensor::Tensor& tokens, const tensor::Tensor& gradLogits,
                                    uint64_t seed) {
  tensor::manual_seed(seed);
  std::vector<LMStep> out;
  out.push_back(lm_step(lm, tokens, gradLogits));
  out.push_back(lm_step(lm, tokens, gradLogits));
  return out;
}

inline void check_identical(const std::vector<LMStep>& want, const std::vector<LMStep>& got) {
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("step ", i);
    CHECK(got[i].logits == want[i].logits);
    CHECK(got[i].embeddingGrad == want[i].embeddingGrad);
    CHECK(got[i].offset == want[i].offset);
    REQUIRE(got[i].grads.size() == want[i].grads.size());
    for (const auto& [name, g] : want[i].grads) {
      INFO(name);
      REQUIRE(got[i].grads.count(name) == 1);
      CHECK(got[i].grads.at(name) == g);
    }
  }
}

}  // namespace testing
