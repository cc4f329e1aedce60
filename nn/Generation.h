// Generation.h: text generation with a DecoderLM through a KVCache, on either backend. The
// sampler runs on the host: greedy decoding copies each row's largest logit and its id (found
// on the model's device), sampling copies each row's logits (Note [Captured decode steps] in
// Generation.cpp).
// generate(model, prompts, options): a batch of prompts of any lengths, right-padded and run
// in one prefill pass (the cache then set to each prompt's length, and each row's next token
// drawn from the logits of its last real token), then one token a step for every row through
// the cache, until maxNewTokens or until every row has drawn one of its stop tokens (stopTokens,
// and rowStopTokens[b] for row b; a row that has stops there: its stop token is its last). Returns each row's new
// tokens (prompt excluded). Sampling is llama.cpp's chain: top-k, then top-p (nucleus) over the softmax of what is
// left, then the temperature, then one draw from the generator; temperature 0 is greedy (the first largest logit; top-k
// and top-p change nothing then).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/Generator.h"

namespace nn {

class DecoderLM;

struct GenerationOptions {
  int64_t maxNewTokens = 16;        // >= 0
  double temperature = 0;           // 0: greedy; else > 0
  int64_t topK = 0;                 // 0: all tokens; else the k largest logits
  double topP = 1;                  // in (0, 1]: the smallest set whose probability reaches it
  std::vector<int64_t> stopTokens;  // a row stops after drawing one of these
  // Empty, or one list per prompt: row b also stops on rowStopTokens[b].
  std::vector<std::vector<int64_t>> rowStopTokens;
  uint64_t seed = 0x5eed;  // the draws' generator when `generator` is null
  tensor::Generator* generator = nullptr;
  int64_t padToken = 0;  // fills the prefill's rows past their prompt (any id works)
  // On a CUDA device: the decode step captured once in a CUDA graph and replayed (the cache then
  // attends over its whole length, KVCacheOptions::fixedShape); the tokens are the same as
  // eager decoding's. false: every step runs eagerly. Ignored on the CPU.
  bool cudaGraph = true;
};

// Throws "nn.generate: expected ..." for options out of range (temperature < 0, top_p not in
// (0, 1], top_k < 0, maxNewTokens < 0, rowStopTokens neither empty nor one list per prompt), for
// an empty prompt or batch, for a token id outside
// [0, vocab), and for prompts whose generation would pass n_positions; nothing runs then.
// A decode step that cannot be captured (cudaGraph) throws, naming the option that avoids it.
std::vector<std::vector<int64_t>> generate(DecoderLM& model, const std::vector<std::vector<int64_t>>& prompts,
                                           const GenerationOptions& options = {});

// One token from one row of logits through the sampler chain above (the part of generate() a
// test reaches alone). Throws for options out of range and for NaN logits.
int64_t sample_token(const std::vector<float>& logits, const GenerationOptions& options, tensor::Generator& gen);
// The options' checks alone: "<where>expected ..., got ...".
void check_generation_options(const std::string& where, const GenerationOptions& options);

}  // namespace nn
