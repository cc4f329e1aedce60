// Generation.cpp: the prefill, the decode loop through the cache, and the sampler chain on the host.
#include "nn/Generation.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <sstream>

#include "nn/DecoderLM.h"
#include "nn/Embedding.h"
#include "nn/KVCache.h"

namespace nn {

namespace {

constexpr const char* kWhere = "nn.generate: ";

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// softmax of values[0..n) in place (the max subtracted; -inf entries get 0)
void softmax_in_place(std::vector<double>& values) {
  const double top = *std::max_element(values.begin(), values.end());
  double total = 0;
  for (double& v : values) {
    v = std::exp(v - top);
    total += v;
  }
  for (double& v : values) v /= total;
}

// Restores the model's cache and mode however generate() leaves.
struct ModelState {
  DecoderLM& model;
  std::shared_ptr<KVCache> cache;
  bool training;
  explicit ModelState(DecoderLM& m) : model(m), cache(m.cache()), training(m.isTraining()) {}
  ~ModelState() {
    try {
      model.setCache(cache);
    } catch (...) {  // the cache was the model's a moment ago; nothing to report from a destructor
    }
    if (training) model.train();
  }
  ModelState(const ModelState&) = delete;
  ModelState& operator=(const ModelState&) = delete;
};

}  // namespace

void check_generation_options(const std::string& where, const GenerationOptions& o) {
  if (o.maxNewTokens < 0) throw Error(where + "expected maxNewTokens >= 0, got " + std::to_string(o.maxNewTokens));
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature)) {
    throw Error(where + "expected a finite temperature >= 0 (0: greedy), got " + num(o.temperature));
  }
  if (!(o.topP > 0 && o.topP <= 1)) throw Error(where + "expected top_p in (0, 1], got " + num(o.topP));
  if (o.topK < 0) throw Error(where + "expected top_k >= 0 (0: every token), got " + std::to_string(o.topK));
}

int64_t sample_token(const std::vector<float>& logits, const GenerationOptions& options, tensor::Generator& gen) {
  check_generation_options(kWhere, options);
  if (logits.empty()) throw Error(std::string(kWhere) + "expected logits of at least one token, got none");
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i]) || logits[i] == INFINITY) {
      throw Error(std::string(kWhere) + "expected logits that are neither NaN nor +inf, got " + num(logits[i]) +
                  " for token " + std::to_string(i));
    }
  }
  if (options.temperature == 0) {  // greedy: the first largest
    return static_cast<int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  // candidates by logit, largest first (ties by id)
  std::vector<int64_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  // top-k
  if (options.topK > 0 && static_cast<size_t>(options.topK) < ids.size()) ids.resize(options.topK);
  // top-p over the softmax of the kept logits, at temperature 1 (llama.cpp's order): the
  // shortest prefix whose probability reaches p
  if (options.topP < 1) {
    std::vector<double> p(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) p[i] = logits[ids[i]];
    softmax_in_place(p);
    double cumulative = 0;
    size_t keep = ids.size();
    for (size_t i = 0; i < p.size(); ++i) {
      cumulative += p[i];
      if (cumulative >= options.topP) {
        keep = i + 1;
        break;
      }
    }
    ids.resize(keep);
  }
  // temperature, then one draw
  std::vector<double> p(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) p[i] = static_cast<double>(logits[ids[i]]) / options.temperature;
  softmax_in_place(p);
  const double u = gen.uniform();
  double cumulative = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    cumulative += p[i];
    if (u < cumulative) return ids[i];
  }
  // rounding left the sum just below u: the last candidate with any probability
  for (size_t i = ids.size(); i-- > 0;) {
    if (p[i] > 0) return ids[i];
  }
  return ids.front();
}

std::vector<std::vector<int64_t>> generate(DecoderLM& model, const std::vector<std::vector<int64_t>>& prompts,
                                           const GenerationOptions& options) {
  check_generation_options(kWhere, options);
  const DecoderLMConfig& cfg = model.settings();
  const int64_t B = static_cast<int64_t>(prompts.size());
  if (B == 0) throw Error(std::string(kWhere) + "expected at least one prompt, got none");
  std::vector<int64_t> lengths(B);
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto& prompt = prompts[b];
    if (prompt.empty())
      throw Error(std::string(kWhere) + "expected non-empty prompts, got an empty prompt " + std::to_string(b));
    for (size_t s = 0; s < prompt.size(); ++s) {
      if (prompt[s] < 0 || prompt[s] >= cfg.vocabSize) {
        throw Error(std::string(kWhere) + "expected token ids in [0, " + std::to_string(cfg.vocabSize) + "), got " +
                    std::to_string(prompt[s]) + " at prompt " + std::to_string(b) + ", position " + std::to_string(s));
      }
    }
    lengths[b] = static_cast<int64_t>(prompt.size());
    longest = std::max(longest, lengths[b]);
  }
  if (!options.rowStopTokens.empty() && static_cast<int64_t>(options.rowStopTokens.size()) != B) {
    throw Error(std::string(kWhere) + "expected rowStopTokens empty or one list per prompt (" + std::to_string(B) +
                "), got " + std::to_string(options.rowStopTokens.size()) + " lists");
  }
  if (options.padToken < 0 || options.padToken >= cfg.vocabSize) {
    throw Error(std::string(kWhere) + "expected padToken in [0, " + std::to_string(cfg.vocabSize) + "), got " +
                std::to_string(options.padToken));
  }
  // the last drawn token is never fed back: longest + maxNewTokens - 1 positions at most
  const int64_t span = longest + std::max<int64_t>(options.maxNewTokens - 1, 0);
  if (span > cfg.nPositions) {
    throw Error(std::string(kWhere) + "expected the longest prompt + maxNewTokens - 1 <= n_positions " +
                std::to_string(cfg.nPositions) + ", got " + std::to_string(longest) + " + " +
                std::to_string(options.maxNewTokens) + " - 1");
  }
  std::vector<std::vector<int64_t>> out(B);
  if (options.maxNewTokens == 0) return out;

  tensor::Generator own(options.seed);
  tensor::Generator& gen = options.generator ? *options.generator : own;
  const Tensor& weight = model.wte().weight;
  const tensor::Device device = weight.device();
  auto cache = std::make_shared<KVCache>(cfg.nLayer, B, cfg.kvHeads(), span, cfg.headDim(), weight.dtype(), device);
  ModelState restore(model);
  model.evaluate();
  model.setCache(cache);

  // prefill: the prompts right-padded, one pass; then each row's length
  std::vector<int64_t> padded(static_cast<size_t>(B * longest), options.padToken);
  for (int64_t b = 0; b < B; ++b) std::copy(prompts[b].begin(), prompts[b].end(), padded.begin() + b * longest);
  const Tensor logits = model.forward(tensor::from_vector(padded, {B, longest}).to(device));
  cache->setLengths(lengths);
  std::vector<std::vector<float>> rows(B);
  for (int64_t b = 0; b < B; ++b) {
    rows[b] = logits.select(0, b).select(0, lengths[b] - 1).to(DType::Float32).cpu().to_vector<float>();
  }

  std::vector<bool> finished(B, false);
  std::vector<int64_t> next(B, options.padToken);
  for (int64_t step = 0;; ++step) {
    for (int64_t b = 0; b < B; ++b) {
      if (finished[b]) continue;
      const int64_t t = sample_token(rows[b], options, gen);
      out[b].push_back(t);
      next[b] = t;
      auto stops = [t](const std::vector<int64_t>& list) {
        return std::find(list.begin(), list.end(), t) != list.end();
      };
      if (stops(options.stopTokens) || (!options.rowStopTokens.empty() && stops(options.rowStopTokens[b]))) {
        finished[b] = true;
      }
    }
    if (step + 1 == options.maxNewTokens || std::all_of(finished.begin(), finished.end(), [](bool f) { return f; })) {
      break;
    }
    // one token a row through the cache (a finished row's results are not read)
    const Tensor step_logits = model.forward(tensor::from_vector(next, {B, 1}).to(device));
    // every row's logits to the host in one copy (one synchronisation a step, not one a row)
    const std::vector<float> all = step_logits.select(1, 0).to(DType::Float32).cpu().to_vector<float>();
    const size_t V = all.size() / static_cast<size_t>(B);
    for (int64_t b = 0; b < B; ++b) {
      if (!finished[b]) rows[b].assign(all.begin() + b * V, all.begin() + (b + 1) * V);
    }
  }
  return out;
}

}  // namespace nn
