// DecoderLM.cpp: the embeddings, the blocks, the final norm and the head, each a child's pass;
// the position ids and the embeddings' sum are tensor ops on the tokens' device.
#include "nn/DecoderLM.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/DecoderBlock.h"
#include "nn/Embedding.h"
#include "nn/GELU.h"
#include "nn/KVCache.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/ModuleConfig.h"
#include "nn/ModuleWrapper.h"
#include "nn/MultiheadAttention.h"
#include "nn/RMSNorm.h"
#include "nn/Rotary.h"
#include "nn/Sequential.h"
#include "nn/SwiGLU.h"

namespace nn {

std::string decoder_kind_name(DecoderKind kind) { return kind == DecoderKind::GPT2 ? "gpt2" : "llama"; }

void DecoderLMConfig::check(const std::string& where) const {
  auto positive = [&](const char* field, int64_t v) {
    if (v < 1) throw Error(where + "expected " + field + " >= 1, got " + std::to_string(v));
  };
  positive("vocab_size", vocabSize);
  positive("n_positions", nPositions);
  positive("n_embd", nEmbd);
  positive("n_layer", nLayer);
  positive("n_head", nHead);
  if (nEmbd % nHead != 0) {
    throw Error(where + "expected n_embd divisible by n_head, got n_embd " + std::to_string(nEmbd) + " and n_head " +
                std::to_string(nHead));
  }
  if (nKvHead < 0 || (nKvHead > 0 && nHead % nKvHead != 0)) {
    throw Error(where + "expected n_kv_head 0 (= n_head) or a divisor of n_head " + std::to_string(nHead) + ", got " +
                std::to_string(nKvHead));
  }
  if (kind == DecoderKind::GPT2 && nKvHead != 0 && nKvHead != nHead) {
    throw Error(where + "expected n_kv_head 0 or n_head for gpt2, got " + std::to_string(nKvHead));
  }
  if (intermediateSize < 0) {
    throw Error(where + "expected intermediate_size >= 0 (0: 4 n_embd), got " + std::to_string(intermediateSize));
  }
  if (!(std::isfinite(normEps) && normEps >= 0)) {
    std::ostringstream msg;
    msg << where << "expected a finite norm_eps >= 0, got " << normEps;
    throw Error(msg.str());
  }
  if (!(std::isfinite(ropeTheta) && ropeTheta > 0)) {
    std::ostringstream msg;
    msg << where << "expected a finite rope_theta > 0, got " << ropeTheta;
    throw Error(msg.str());
  }
  if (kind == DecoderKind::Llama && headDim() % 2 != 0) {
    throw Error(where + "expected an even head size (n_embd / n_head) for rotary embeddings, got " +
                std::to_string(headDim()));
  }
}

tensor::Json DecoderLMConfig::json() const {
  return tensor::Json::Object{{"kind", decoder_kind_name(kind)},
                              {"vocab_size", vocabSize},
                              {"n_positions", nPositions},
                              {"n_embd", nEmbd},
                              {"n_layer", nLayer},
                              {"n_head", nHead},
                              {"n_kv_head", nKvHead},
                              {"intermediate_size", intermediateSize},
                              {"norm_eps", normEps},
                              {"rope_theta", ropeTheta},
                              {"tied", tied}};
}

DecoderLMConfig DecoderLMConfig::read(ConfigReader& c) {
  DecoderLMConfig out;
  const std::string kind = c.string("kind", "gpt2");
  if (kind != "gpt2" && kind != "llama") {
    throw Error(c.describe("kind") + ": expected 'gpt2' or 'llama', got '" + kind + "'");
  }
  out.kind = kind == "gpt2" ? DecoderKind::GPT2 : DecoderKind::Llama;
  out.vocabSize = c.integer("vocab_size");
  out.nPositions = c.integer("n_positions");
  out.nEmbd = c.integer("n_embd");
  out.nLayer = c.integer("n_layer");
  out.nHead = c.integer("n_head");
  out.nKvHead = c.integer("n_kv_head", 0);
  out.intermediateSize = c.integer("intermediate_size", 0);
  out.normEps = c.number("norm_eps", 1e-5);
  out.ropeTheta = c.number("rope_theta", 10000);
  out.tied = c.flag("tied", true);
  return out;
}

namespace {

ModulePtr make_norm(const DecoderLMConfig& c) {
  if (c.kind == DecoderKind::GPT2) return std::make_shared<LayerNorm>(Shape{c.nEmbd}, c.normEps);
  return std::make_shared<RMSNorm>(Shape{c.nEmbd}, c.normEps, true);
}

// Note [Decoder initialisation]: the blocks start as transformers' GPT2PreTrainedModel and
// LlamaPreTrainedModel initialise them (initializer_range 0.02), not as their library modules
// would alone (Linear's U(+-1/sqrt(fan_in)), PyTorch MHA's Xavier): every projection N(0, 0.02)
// with zero biases, and in GPT-2 the two projections that write into the residual stream (attn
// c_proj, mlp c_proj) N(0, 0.02 / sqrt(2 n_layer)) (GPT-2 paper, section 2.3). Measured: with the
// modules' own initialisation samples/gpt's held-out loss ended 0.3 nats above PyTorch's on the
// same recipe.
void init_projection(Tensor& weight, Tensor& bias, double std) {
  weight.normal_(0, std);
  if (bias.defined()) bias.zero_();
}

ModulePtr make_block(const DecoderLMConfig& c) {
  const double std = 0.02;
  const double residualStd = c.kind == DecoderKind::GPT2 ? std / std::sqrt(2.0 * static_cast<double>(c.nLayer)) : std;
  MultiheadAttentionOptions o;
  o.embedDim = c.nEmbd;
  o.numHeads = c.nHead;
  o.numKvHeads = c.kvHeads();
  o.bias = c.kind == DecoderKind::GPT2;
  o.batchFirst = true;
  o.causal = true;
  if (c.kind == DecoderKind::Llama) {
    RotaryOptions r;
    r.style = RotaryStyle::Half;
    r.theta = c.ropeTheta;
    o.rotary = r;
  }
  auto attn = std::make_shared<MultiheadAttention>(o);
  init_projection(attn->inProjWeight, attn->inProjBias, std);
  init_projection(attn->outProjWeight, attn->outProjBias, residualStd);
  ModulePtr mlp;
  if (c.kind == DecoderKind::GPT2) {
    auto fc = std::make_shared<Linear>(c.nEmbd, c.hidden());
    auto proj = std::make_shared<Linear>(c.hidden(), c.nEmbd);
    init_projection(fc->weight, fc->bias, std);
    init_projection(proj->weight, proj->bias, residualStd);
    mlp = std::make_shared<Sequential>(std::initializer_list<ModulePtr>{fc, std::make_shared<GELU>("tanh"), proj});
  } else {
    auto swiglu = std::make_shared<SwiGLU>(c.nEmbd, c.hidden(), false);
    init_projection(swiglu->gateWeight, swiglu->gateBias, std);
    init_projection(swiglu->upWeight, swiglu->upBias, std);
    init_projection(swiglu->downWeight, swiglu->downBias, std);
    mlp = swiglu;
  }
  return std::make_shared<DecoderBlock>(make_norm(c), attn, make_norm(c), mlp);
}

template <class M>
M& child_as(const DecoderLM& lm, const std::vector<ModulePtr>& kids, size_t i, const std::string& name,
            const char* what) {
  auto* m = dynamic_cast<M*>(&unwrapped(child_at(lm, kids, i, "child")));  // through a wrapper in the slot
  if (!m) throw Error(lm.type_name() + "::" + name + ": expected " + what + ", got " + kids[i]->type_name());
  return *m;
}

}  // namespace

DecoderLM::DecoderLM(const DecoderLMConfig& config) : config_(config) {
  config_.check(std::string(kTypeName) + ": ");
  const DecoderLMConfig& c = config_;
  auto wte = std::make_shared<Embedding>(c.vocabSize, c.nEmbd);
  wte->weight.normal_(0, 0.02);  // GPT-2's and Llama's initialisation (initializer_range)
  add(wte);
  if (learnedPositions()) {
    auto wpe = std::make_shared<Embedding>(c.nPositions, c.nEmbd);
    wpe->weight.normal_(0, 0.02);
    add(wpe);
  }
  auto h = std::make_shared<Sequential>();
  for (int64_t i = 0; i < c.nLayer; ++i) h->add(make_block(c));
  add(h);
  add(make_norm(c));
  auto head = std::make_shared<Linear>(c.nEmbd, c.vocabSize, false);
  head->weight.normal_(0, 0.02);  // Note [Decoder initialisation] (replaced by wte.weight when tied)
  add(head);
  tieWeights();
}

DecoderLM::DecoderLM(const DecoderLMConfig& config, std::vector<ModulePtr> children) : config_(config) {
  config_.check(std::string(kTypeName) + ": ");
  const size_t want = learnedPositions() ? 5 : 4;
  if (children.size() != want) {
    throw Error(std::string(kTypeName) + ": expected " + std::to_string(want) + " children (wte, " +
                (learnedPositions() ? "wpe, " : "") + "h, ln_f, lm_head) for " + decoder_kind_name(config_.kind) +
                ", got " + std::to_string(children.size()));
  }
  for (auto& k : children) add(std::move(k));
  checkModules("DecoderLM");
  tieWeights();
}

std::string DecoderLM::childName(size_t i) const {
  static const char* const withPositions[] = {"wte", "wpe", "h", "ln_f", "lm_head"};
  static const char* const rotary[] = {"wte", "h", "ln_f", "lm_head"};
  const size_t n = learnedPositions() ? 5 : 4;
  if (i >= n) return std::to_string(i);
  return learnedPositions() ? withPositions[i] : rotary[i];
}

size_t DecoderLM::slot(const char* name) const {
  const size_t n = learnedPositions() ? 5 : 4;
  for (size_t i = 0; i < n; ++i) {
    if (childName(i) == name) return i;
  }
  throw Error(type_name() + "::" + name + ": expected a model with learned positions (gpt2), got " +
              decoder_kind_name(config_.kind));
}

Embedding& DecoderLM::wte() const { return child_as<Embedding>(*this, modules, slot("wte"), "wte", "an nn.Embedding"); }
Embedding& DecoderLM::wpe() const { return child_as<Embedding>(*this, modules, slot("wpe"), "wpe", "an nn.Embedding"); }
Sequential& DecoderLM::blocks() const {
  return child_as<Sequential>(*this, modules, slot("h"), "h", "an nn.Sequential");
}
DecoderBlock& DecoderLM::block(int64_t i) const {
  Sequential& h = blocks();
  if (i < 0 || static_cast<size_t>(i) >= h.size()) {
    throw Error(where("block") + "expected a block index in [0, " + std::to_string(h.size()) + "), got " +
                std::to_string(i));
  }
  return child_as<DecoderBlock>(*this, h.modules, static_cast<size_t>(i), "h." + std::to_string(i),
                                "an nn.DecoderBlock");
}
Module& DecoderLM::lnF() const { return child_at(*this, modules, slot("ln_f"), "ln_f"); }
Linear& DecoderLM::lmHead() const {
  return child_as<Linear>(*this, modules, slot("lm_head"), "lm_head", "an nn.Linear");
}

void DecoderLM::tieWeights() {
  if (config_.tied) tieParameters("lm_head.weight", "wte.weight");
}

void DecoderLM::checkModules(const char* method) const {
  const size_t n = learnedPositions() ? 5 : 4;
  if (modules.size() != n) {
    throw Error(where(method) + "expected " + std::to_string(n) + " modules, got " + std::to_string(modules.size()));
  }
  const DecoderLMConfig& c = config_;
  auto expect = [&](const std::string& what, int64_t got, int64_t want) {
    if (got != want) {
      throw Error(where(method) + "expected " + what + " " + std::to_string(want) + ", got " + std::to_string(got));
    }
  };
  Embedding& e = wte();
  expect("wte of vocab_size entries", e.numEmbeddings, c.vocabSize);
  expect("wte of n_embd columns", e.embeddingDim, c.nEmbd);
  if (learnedPositions()) {
    expect("wpe of n_positions entries", wpe().numEmbeddings, c.nPositions);
    expect("wpe of n_embd columns", wpe().embeddingDim, c.nEmbd);
  }
  expect("the number of blocks in h", static_cast<int64_t>(blocks().size()), c.nLayer);
  for (int64_t i = 0; i < c.nLayer; ++i) {
    const MultiheadAttention& a = block(i).attn();
    expect("h." + std::to_string(i) + ".attn's embed_dim", a.embedDim, c.nEmbd);
  }
  expect("lm_head's input size", lmHead().inputSize, c.nEmbd);
  expect("lm_head's output size", lmHead().outputSize, c.vocabSize);
  lnF();
}

void DecoderLM::checkTokens(const Tensor& tokens, const char* method) const {
  if (!tokens.defined() || tokens.dtype() != DType::Int64 || tokens.dim() != 2) {
    throw Error(where(method) + "expected int64 token ids [B x S], got " +
                (tokens.defined() ? tokens.description() : std::string("an undefined tensor")));
  }
  const int64_t S = tokens.size(1);
  const int64_t start = cache_ ? cache_->maxHostLength() : 0;
  if (cache_ && cache_->batch() != tokens.size(0)) {
    throw Error(where(method) + "expected token ids of the cache's batch " + std::to_string(cache_->batch()) +
                ", got " + tensor::shape_str(tokens.sizes()));
  }
  if (start + S > config_.nPositions) {
    throw Error(where(method) + "expected positions below n_positions " + std::to_string(config_.nPositions) +
                ", got " + std::to_string(S) + " tokens" +
                (cache_ ? " after " + std::to_string(start) + " cached" : std::string()));
  }
}

void DecoderLM::setCache(std::shared_ptr<KVCache> cache) {
  checkModules("setCache");
  const DecoderLMConfig& c = config_;
  if (cache && (cache->layers() != c.nLayer || cache->kvHeads() != c.kvHeads() || cache->headDim() != c.headDim())) {
    throw Error(where("setCache") + "expected a cache of " + std::to_string(c.nLayer) + " layers, " +
                std::to_string(c.kvHeads()) + " kv heads and head size " + std::to_string(c.headDim()) + ", got " +
                cache->str());
  }
  for (int64_t i = 0; i < c.nLayer; ++i) block(i).attn().setCache(cache, i);
  cache_ = std::move(cache);
}

void DecoderLM::setActivationCheckpointing(bool on) {
  setActivationCheckpointing(std::vector<bool>(static_cast<size_t>(config_.nLayer), on));
}

void DecoderLM::setActivationCheckpointing(const std::vector<bool>& on) {
  checkModules("setActivationCheckpointing");
  if (static_cast<int64_t>(on.size()) != config_.nLayer) {
    throw Error(where("setActivationCheckpointing") + "expected one flag per block (" + std::to_string(config_.nLayer) +
                "), got " + std::to_string(on.size()));
  }
  for (int64_t i = 0; i < config_.nLayer; ++i) block(i).setActivationCheckpointing(on[static_cast<size_t>(i)]);
}

std::vector<bool> DecoderLM::activationCheckpointing() const {
  checkModules("activationCheckpointing");
  std::vector<bool> on;
  for (int64_t i = 0; i < config_.nLayer; ++i) on.push_back(block(i).activationCheckpointing());
  return on;
}

void DecoderLM::releaseActivations() {
  Container::releaseActivations();
  positions_ = x_ = hidden_ = normed_ = rowsOutput_ = Tensor();
}

const Tensor& DecoderLM::forwardChild(size_t i, const Tensor& in) {
  return rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->forward(in); });
}

const Tensor& DecoderLM::forwardBlocks(const Tensor& input, const char* method) {
  checkModules(method);
  checkTokens(input, method);
  const int64_t B = input.size(0), S = input.size(1);
  const Tensor& e = forwardChild(0, input);
  if (learnedPositions()) {
    // position ids on the tokens' device: s, or lengths[b] + s behind a cache
    if (!steps_.defined() || steps_.device() != input.device() || steps_.numel() < S) {
      steps_ = tensor::arange(0, static_cast<double>(S), 1, DType::Int64, input.device());
    }
    const Tensor steps = steps_.narrow(0, 0, S).view({1, S});
    positions_ = cache_ ? steps.add(cache_->lengths().to(input.device()).view({B, 1})).contiguous()
                        : steps.expand({B, S}).contiguous();
    const Tensor& p = forwardChild(1, positions_);
    tensor::add_out(ensure(x_, e.sizes(), e), e, p);
  } else {
    x_ = e;
  }
  if (cache_) cache_->beginStep(S);  // the keys' lengths, once for every block
  hidden_ = forwardChild(slot("h"), x_);
  if (cache_) cache_->advance(S);  // every block has written its S tokens
  return hidden_;
}

const Tensor& DecoderLM::updateOutput(const Tensor& input) {
  forwardBlocks(input, "updateOutput");
  const size_t lnf = slot("ln_f");
  normed_ = forwardChild(lnf, hidden_);
  output = forwardChild(lnf + 1, normed_);
  return output;
}

const Tensor& DecoderLM::forwardRows(const Tensor& tokens, const Tensor& rows) {
  if (!rows.defined() || rows.dim() != 1 || rows.dtype() != DType::Int64) {
    throw Error(where("forwardRows") + "expected the rows as int64 [N], got " +
                (rows.defined() ? rows.description() : std::string("an undefined tensor")));
  }
  checkTokens(tokens, "forwardRows");
  if (rows.device() != tokens.device()) {
    throw Error(where("forwardRows") + "the rows " + rows.description() + " are not on the tokens' device " +
                tokens.device().str());
  }
  // the rows are checked against B x S before the forward writes anything (a cache included)
  const int64_t flat = tokens.size(0) * tokens.size(1);
  if (rows.numel() > 0) {
    const std::vector<int64_t> host = rows.cpu().to_vector<int64_t>();
    const auto [lo, hi] = std::minmax_element(host.begin(), host.end());
    if (*lo < 0 || *hi >= flat) {
      throw Error(where("forwardRows") + "row " + std::to_string(*lo < 0 ? *lo : *hi) + " is outside the " +
                  std::to_string(flat) + " positions of tokens " + tokens.description());
    }
  }
  const Tensor& hidden = forwardBlocks(tokens, "forwardRows");
  const size_t lnf = slot("ln_f");
  const Tensor picked = tensor::index_select(hidden.reshape({flat, config_.nEmbd}), 0, rows);
  rowsOutput_ = forwardChild(lnf + 1, forwardChild(lnf, picked));
  normed_ = Tensor();  // ln_f and the head hold the picked rows' state: no backward from here
  return rowsOutput_;
}

void DecoderLM::backwardPass(const Tensor& input, const Tensor& gradOutput, double scale) {
  checkModules("backward");
  checkTokens(input, "backward");
  const Shape want{input.size(0), input.size(1), config_.vocabSize};
  check_grad_output_shape(where("backward"), want, gradOutput);
  if (!normed_.defined() || !x_.defined() || x_.size(0) != input.size(0) || x_.size(1) != input.size(1)) {
    throw Error(where("backward") + "expected a forward() of input " + input.description() + " first");
  }
  auto bwd = [&](size_t i, const Tensor& in, const Tensor& g) -> const Tensor& {
    return rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->backward(in, g, scale); });
  };
  auto done = [&](size_t i) {
    if (freesIntermediateGradients()) modules[i]->releaseGradInput();
  };
  const size_t h = slot("h"), lnf = slot("ln_f");
  const Tensor& gn = bwd(lnf + 1, normed_, gradOutput);
  const Tensor& gh = bwd(lnf, hidden_, gn);
  done(lnf + 1);
  const Tensor& gx = bwd(h, x_, gh);
  done(lnf);
  bwd(0, input, gx);
  if (learnedPositions()) bwd(1, positions_, gx);
  done(h);
  gradInput = Tensor();
}

void DecoderLM::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, scale);
}

const Tensor& DecoderLM::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  backwardPass(input, gradOutput, 0.0);  // the parameters accumulate zero times the gradient
  return gradInput;
}

void DecoderLM::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, scale);
}

std::string DecoderLM::str() const {
  std::ostringstream s;
  const DecoderLMConfig& c = config_;
  s << type_name() << "(" << decoder_kind_name(c.kind) << ", vocab=" << c.vocabSize << ", n_positions=" << c.nPositions
    << ", n_embd=" << c.nEmbd << ", n_layer=" << c.nLayer << ", n_head=" << c.nHead;
  if (c.kvHeads() != c.nHead) s << ", n_kv_head=" << c.kvHeads();
  s << (c.tied ? ", tied" : "") << ") {";
  for (size_t i = 0; i < modules.size(); ++i) {
    s << "\n  (" << childName(i) << "): " << indent_lines(modules[i] ? modules[i]->str() : "nullptr", "  ");
  }
  s << "\n}";
  return s.str();
}

tensor::Json DecoderLM::config() const { return config_.json(); }

ModulePtr DecoderLM::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader c(config, kTypeName);
  const DecoderLMConfig settings = DecoderLMConfig::read(c);
  c.finish();
  return std::make_shared<DecoderLM>(settings, std::move(children));
}

std::shared_ptr<DecoderLM> make_gpt2(DecoderLMConfig config) {
  config.kind = DecoderKind::GPT2;
  return std::make_shared<DecoderLM>(config);
}

std::shared_ptr<DecoderLM> make_llama(DecoderLMConfig config) {
  config.kind = DecoderKind::Llama;
  return std::make_shared<DecoderLM>(config);
}

}  // namespace nn
