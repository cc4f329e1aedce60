// Generation.cpp: the prefill, the decode loop through the cache (captured in a CUDA graph on a
// GPU), and the sampler chain on the host.
#include "nn/Generation.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <sstream>
#include <tuple>

#include "nn/DecoderLM.h"
#include "nn/Embedding.h"
#include "nn/KVCache.h"
#include "tensor/Cuda.h"

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

// Note [Captured decode steps]
// On a CUDA device generate() captures one decode step (the model's forward of [B x 1] tokens
// through a fixed-shape cache, and the reduction below) in a CUDA graph and replays it for every
// later token: a step of a small model is a few hundred short kernels whose launches, not the
// GPU, set its time. What the capture needs: the step's input is one static tensor refreshed in
// place; the cache's lengths live on the device and the forward advances them there (its host
// mirror stops following after the capture; generate() uses its own cache and drops it); no
// host read inside the step. What the host then reads is small: for greedy decoding each row's
// largest logit and its first index, not the row.

// One step's next-token logits, reduced on their device as far as the sampler allows.
struct StepLogits {
  Tensor rows;     // float32 [B x V] (on the host path's precision: float32 before the comparison)
  Tensor top, at;  // greedy: each row's largest logit (float32 [B]) and its first index (int64 [B])
};

StepLogits reduce_logits(const Tensor& logits, bool greedy) {  // logits [B x V]
  StepLogits s;
  s.rows = logits.to(DType::Float32).contiguous();
  if (greedy) std::tie(s.top, s.at) = s.rows.max(1);  // the first NaN, else the first largest
  return s;
}

// Each unfinished row's token from `s` (finished rows: unused). Greedy reads 2B numbers; a row
// whose largest is NaN or +inf is read whole, so that sample_token names the value and the token.
std::vector<int64_t> draw_tokens(const StepLogits& s, const std::vector<bool>& finished,
                                 const GenerationOptions& options, tensor::Generator& gen) {
  const int64_t B = static_cast<int64_t>(finished.size());
  std::vector<int64_t> drawn(B, 0);
  if (s.at.defined()) {
    const std::vector<float> top = s.top.cpu().to_vector<float>();
    const std::vector<int64_t> at = s.at.cpu().to_vector<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      if (finished[b]) continue;
      drawn[b] = std::isnan(top[b]) || top[b] == INFINITY
                     ? sample_token(s.rows.select(0, b).cpu().to_vector<float>(), options, gen)
                     : at[b];
    }
    return drawn;
  }
  const std::vector<float> all = s.rows.cpu().to_vector<float>();  // one copy, one synchronisation
  const size_t V = all.size() / static_cast<size_t>(B);
  for (int64_t b = 0; b < B; ++b) {
    if (finished[b]) continue;
    drawn[b] = sample_token(std::vector<float>(all.begin() + b * V, all.begin() + (b + 1) * V), options, gen);
  }
  return drawn;
}

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
  const bool graphed = options.cudaGraph && device.is_cuda();
  auto cache = std::make_shared<KVCache>(cfg.nLayer, B, cfg.kvHeads(), span, cfg.headDim(), weight.dtype(), device,
                                         KVCacheOptions{.fixedShape = graphed});
  ModelState restore(model);
  model.evaluate();
  model.setCache(cache);
  const bool greedy = options.temperature == 0;

  // prefill: the prompts right-padded, one pass; then each row's length, and the logits of each
  // row's last real token
  std::vector<int64_t> padded(static_cast<size_t>(B * longest), options.padToken);
  for (int64_t b = 0; b < B; ++b) std::copy(prompts[b].begin(), prompts[b].end(), padded.begin() + b * longest);
  std::vector<int64_t> last(B);
  for (int64_t b = 0; b < B; ++b) last[b] = b * longest + lengths[b] - 1;
  // ln_f and the head on each row's last real token only (not the B x longest x V logits)
  const Tensor logits =
      model.forwardRows(tensor::from_vector(padded, {B, longest}).to(device), tensor::from_vector(last, {B}).to(device));
  cache->setLengths(lengths);
  StepLogits prefill = reduce_logits(logits, greedy);

  std::vector<bool> finished(B, false);
  std::vector<int64_t> next(B, options.padToken);
  Tensor tokens = tensor::zeros({B, 1}, DType::Int64, device);  // the decode step's input, refreshed in place
  StepLogits decoded;
  tensor::cuda::Graph graph;
  const StepLogits* current = &prefill;
  for (int64_t step = 0;; ++step) {
    const std::vector<int64_t> drawn = draw_tokens(*current, finished, options, gen);
    for (int64_t b = 0; b < B; ++b) {
      if (finished[b]) continue;
      const int64_t t = drawn[b];
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
    tokens.copy_(tensor::from_vector(next, {B, 1}));
    auto decode = [&] { decoded = reduce_logits(model.forward(tokens).select(1, 0), greedy); };
    // Note [Captured decode steps]: the first decode step runs eagerly (plans, workspaces), the
    // second is captured when at least one more follows, and every later one replays it.
    const int64_t remaining = options.maxNewTokens - 1 - step;
    if (graph.defined()) {
      graph.replay();
    } else if (graphed && step >= 1 && remaining >= 2) {
      try {
        graph = tensor::cuda::Graph::capture(decode, device.index);
      } catch (const Error& e) {
        throw Error(std::string(kWhere) +
                    "the decode step could not be captured in a CUDA graph (set "
                    "GenerationOptions::cudaGraph = false to decode eagerly): " +
                    e.what());
      }
      graph.replay();
    } else {
      decode();
    }
    current = &decoded;
  }
  return out;
}

}  // namespace nn
