// gpt: trains a GPT-2-class language model (nn::make_gpt2: learned positions, pre-norm blocks,
// gelu-tanh MLP, LM head tied to the token embedding) on real text with a byte-level BPE
// tokenizer trained for it, then generates. The text is the licenses every Debian machine
// carries in /usr/share/common-licenses (package base-files, Priority: required): about 300 kB
// of English prose in a dozen documents, no download, the same on every machine. The last 10 %
// of each document's tokens are held out; the held-out loss (nats per token) is what the run
// reports and what scripts/gpt_torch.py measures for the same model and recipe in PyTorch.
// The recipe is nanoGPT's: AdamW with decay groups (no decay on biases and norms), linear
// warm-up then cosine, gradient clipping, random windows of the token file (memory-mapped,
// nanoGPT's .bin layout), gradient accumulation; on the GPU bfloat16 with float32 master weights.
//
//   gpt [--data FILE ...] [--backend nn|cudnn] [--vocab N] [--context N] [--n-embd N]
//       [--layers N] [--heads N] [--batch-size N] [--accum N] [--steps N] [--lr X] [--warmup N]
//       [--weight-decay X] [--amp bfloat16] [--eval-every N] [--stop-at N] [--checkpoint DIR] [--resume DIR]
//       [--log FILE] [--generate N] [--prompt TEXT] [--temperature T] [--top-k K] [--top-p P]
//       [--seed N] [--hf DIR] [--checkpoint-activations]
// --hf DIR loads a Hugging Face checkpoint (GPT2LMHeadModel or LlamaForCausalLM, config.json +
// safetensors) instead of training, and generates from it (with DIR/tokenizer.json when there).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "convert/HuggingFace.h"
#include "nn/AdamW.h"
#include "nn/ClipGrad.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/DecoderLM.h"
#include "nn/Generation.h"
#include "nn/LRScheduler.h"
#include "nn/MixedPrecision.h"
#include "samples/Args.h"
#include "tensor/Cuda.h"
#include "text/BpeTokenizer.h"
#include "train/Checkpoint.h"
#include "train/Data.h"
#include "train/TokenFile.h"
#include "train/TrainingLog.h"

using tensor::Device;
using tensor::DType;
using tensor::Tensor;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::vector<std::string> data;  // empty: every file of /usr/share/common-licenses
  std::string backend = "nn", amp = "float32";
  int64_t vocab = 512, context = 128, nEmbd = 128, layers = 4, heads = 4, batch = 16, accum = 1, steps = 600;
  int64_t warmup = 60, evalEvery = 100, generate = 60, topK = 40, stopAt = 0;
  double lr = 3e-3, weightDecay = 0.1, temperature = 0.8, topP = 0.95;
  std::string checkpoint, resume, log, hf, prompt = "This License";
  uint64_t seed = 1;
  bool checkpointActivations = false;  // DecoderLM::setActivationCheckpointing: the same run, less memory
};

const char* kUsage =
    "usage: gpt [options]\n"
    "  --data FILE       a training text (repeatable; default: every file of /usr/share/common-licenses,\n"
    "                    from base-files); the last 10 % of each file's tokens is held out\n"
    "  --backend B       nn (CPU, default) or cudnn (convert the model and train on the GPU)\n"
    "  --vocab N         the BPE vocabulary trained on the text (default 512, 256 bytes + merges + 1 special)\n"
    "  --context N       tokens per training window (default 128)\n"
    "  --n-embd N        model width (default 128)\n"
    "  --layers N        decoder blocks (default 4)\n"
    "  --heads N         attention heads (default 4)\n"
    "  --batch-size N    windows per micro-batch (default 16)\n"
    "  --accum N         micro-batches per optimizer step (gradient accumulation, default 1)\n"
    "  --steps N         optimizer steps (default 600)\n"
    "  --lr X            peak AdamW learning rate (default 0.003)\n"
    "  --warmup N        linear warm-up steps before the cosine decay (default 60)\n"
    "  --weight-decay X  AdamW's decay of the matrices and embeddings (default 0.1)\n"
    "  --amp bfloat16    cudnn only: bfloat16 compute with float32 master weights\n"
    "  --eval-every N    held-out loss every N steps (default 100)\n"
    "  --stop-at N       stop after step N as if interrupted (the schedule still spans --steps)\n"
    "  --checkpoint DIR  checkpoint, tokenizer and token files there at every evaluation\n"
    "  --resume DIR      go on from DIR's checkpoint (the same options as the run that wrote it)\n"
    "  --log FILE        a line per evaluation and every 10 steps (CSV, or JSON lines for .jsonl;\n"
    "                    scripts/plot_log.py draws it)\n"
    "  --generate N      tokens to generate at the end (default 60; 0: none)\n"
    "  --prompt TEXT     the generation's prompt (default \"This License\")\n"
    "  --temperature T   sampling temperature (default 0.8; 0: greedy)\n"
    "  --top-k K         sample among the K most likely tokens (default 40; 0: all)\n"
    "  --top-p P         and among the smallest set of probability P (default 0.95)\n"
    "  --seed N          initialisation, data order and sampling seed (default 1)\n"
    "  --hf DIR          load a Hugging Face checkpoint from DIR and generate from it (no training)\n"
    "  --checkpoint-activations  recompute each block's forward in backward instead of keeping its\n"
    "                    activations (the same results, less memory; not --checkpoint's files)\n";

Options parse(int argc, char** argv) {
  Options o;
  samples::Args args(argc, argv, kUsage);
  samples::Flags()
      .on("--data", [&o](samples::Args& a, const std::string& f) { o.data.push_back(a.value(f)); })
      .choice("--backend", o.backend, {"nn", "cudnn"})
      .integer("--vocab", o.vocab, 258, 65535)
      .integer("--context", o.context, 2, 8192)
      .integer("--n-embd", o.nEmbd, 1, 8192)
      .integer("--layers", o.layers, 1, 128)
      .integer("--heads", o.heads, 1, 128)
      .integer("--batch-size", o.batch, 1, 65536)
      .integer("--accum", o.accum, 1, 65536)
      .integer("--steps", o.steps, 1, 100000000)
      .number("--lr", o.lr, 1e-8, 10)
      .integer("--warmup", o.warmup, 0, 100000000)
      .number("--weight-decay", o.weightDecay, 0, 10)
      .choice("--amp", o.amp, {"float32", "bfloat16"})
      .integer("--eval-every", o.evalEvery, 1, 100000000)
      .integer("--stop-at", o.stopAt, 1, 100000000)
      .text("--checkpoint", o.checkpoint)
      .text("--resume", o.resume)
      .text("--log", o.log)
      .integer("--generate", o.generate, 0, 1000000)
      .text("--prompt", o.prompt)
      .number("--temperature", o.temperature, 0, 100)
      .integer("--top-k", o.topK, 0, 1000000)
      .number("--top-p", o.topP, 1e-6, 1)
      .integer("--seed", o.seed, 0, INT64_MAX)
      .text("--hf", o.hf)
      .set("--checkpoint-activations", o.checkpointActivations)
      .parse(args);
  if (o.nEmbd % o.heads != 0) args.fail("--n-embd must be divisible by --heads");
  if (o.amp == "bfloat16" && o.backend != "cudnn") args.fail("--amp bfloat16 needs --backend cudnn");
  if (o.warmup >= o.steps) o.warmup = o.steps - 1;
  if (!o.resume.empty() && !fs::exists(nn::checkpoint_file(o.resume))) {
    args.fail("--resume: no checkpoint at '" + nn::checkpoint_file(o.resume) + "' (--checkpoint DIR writes one)");
  }
  return o;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The documents: the named files, or every regular file of the licenses directory once (GPL is
// a link to GPL-3, ...: the same text is read once), sorted by name so every machine agrees.
std::vector<std::string> documents(const Options& o) {
  std::vector<std::string> paths = o.data;
  if (paths.empty()) {
    std::vector<std::string> seen;
    for (const auto& e : fs::directory_iterator("/usr/share/common-licenses")) {
      const std::string target = fs::canonical(e.path()).string();
      if (fs::is_regular_file(target) && std::find(seen.begin(), seen.end(), target) == seen.end()) {
        seen.push_back(target);
      }
    }
    std::sort(seen.begin(), seen.end());
    paths = seen;
  }
  std::vector<std::string> texts;
  for (const auto& p : paths) texts.push_back(read_text(p));
  return texts;
}

// Training and held-out token ids, each document's last tenth held out, documents separated
// by the end-of-text token (GPT-2's convention).
struct Corpus {
  std::vector<int64_t> train, heldOut;
};

Corpus tokenize(const text::BpeTokenizer& tok, const std::vector<std::string>& texts, int64_t eot) {
  Corpus c;
  for (const auto& t : texts) {
    const std::vector<int64_t> ids = tok.encode(t);
    const size_t cut = ids.size() - ids.size() / 10;
    c.train.insert(c.train.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(cut));
    c.train.push_back(eot);
    c.heldOut.insert(c.heldOut.end(), ids.begin() + static_cast<std::ptrdiff_t>(cut), ids.end());
    c.heldOut.push_back(eot);
  }
  return c;
}

// nanoGPT's train.bin: the ids as little-endian uint16, no header (train/TokenFile.h reads it).
void write_tokens(const std::string& path, const std::vector<int64_t>& ids) {
  std::ofstream out(path, std::ios::binary);
  for (const int64_t id : ids) {
    const uint16_t v = static_cast<uint16_t>(id);
    const unsigned char bytes[2] = {static_cast<unsigned char>(v & 0xff), static_cast<unsigned char>(v >> 8)};
    out.write(reinterpret_cast<const char*>(bytes), 2);
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

Device device_of(const Options& o) { return o.backend == "cudnn" ? Device::cuda(0) : Device::cpu(); }

// Mean next-token cross-entropy (nats) over the held-out tokens in windows of `context`.
double held_out_loss(nn::DecoderLM& model, const std::vector<int64_t>& ids, int64_t context, Device device) {
  nn::CrossEntropyCriterion criterion;
  model.evaluate();
  double nats = 0;
  int64_t count = 0;
  for (size_t begin = 0; begin + 1 < ids.size(); begin += static_cast<size_t>(context)) {
    const int64_t n = std::min<int64_t>(context, static_cast<int64_t>(ids.size() - begin) - 1);
    std::vector<int64_t> x(ids.begin() + begin, ids.begin() + begin + n);
    std::vector<int64_t> y(ids.begin() + begin + 1, ids.begin() + begin + n + 1);
    const Tensor logits = model.forward(tensor::from_vector(x, {1, n}).to(device));
    const Tensor scores = logits.view({n, logits.size(2)}).to(DType::Float32);
    nats += criterion.forward(scores, tensor::from_vector(y, {n}).to(device)) * static_cast<double>(n);
    count += n;
  }
  model.train();
  return nats / static_cast<double>(std::max<int64_t>(count, 1));
}

std::string generate_text(nn::DecoderLM& model, const text::BpeTokenizer* tok, const Options& o,
                          std::vector<int64_t> prompt, int64_t eot) {
  nn::GenerationOptions g;
  g.maxNewTokens = std::min<int64_t>(o.generate, model.settings().nPositions - static_cast<int64_t>(prompt.size()));
  g.temperature = o.temperature;
  g.topK = o.topK;
  g.topP = o.topP;
  g.seed = o.seed;
  if (eot >= 0) g.stopTokens = {eot};
  const auto rows = nn::generate(model, {prompt}, g);
  if (!tok) {
    std::ostringstream s;
    for (const int64_t id : rows[0]) s << id << ' ';
    return s.str();
  }
  return tok->decode(rows[0]);
}

int run_hf(const Options& o) {
  auto model = nn::load_hf_causal_lm(o.hf);
  const Device device = device_of(o);
  if (device.is_cuda()) {
    model = std::dynamic_pointer_cast<nn::DecoderLM>(nn::convert(model, cudnn::backend));
    model->to(device);
  }
  std::printf("loaded %s: %s\n", o.hf.c_str(), model->str().substr(0, model->str().find('\n')).c_str());
  const std::string tokPath = (fs::path(o.hf) / "tokenizer.json").string();
  std::unique_ptr<text::BpeTokenizer> tok;
  std::vector<int64_t> prompt;
  if (fs::exists(tokPath)) {
    tok = std::make_unique<text::BpeTokenizer>(text::BpeTokenizer::from_tokenizer_json(tokPath));
    prompt = tok->encode(o.prompt);
  } else {
    prompt = {0};  // no tokenizer: ids only, from token 0
    std::printf("no tokenizer.json in %s: generating token ids from id 0\n", o.hf.c_str());
  }
  model->evaluate();
  std::printf("%s%s\n", o.prompt.c_str(), generate_text(*model, tok.get(), o, prompt, -1).c_str());
  return 0;
}

int run(const Options& o) {
  if (!o.hf.empty()) return run_hf(o);
  tensor::manual_seed(o.seed);
  const Device device = device_of(o);
  const auto start = std::chrono::steady_clock::now();

  // The tokenizer: trained on the training text (deterministic, so a resumed run trains the
  // same one; the checkpoint directory keeps a copy for other programs).
  const std::vector<std::string> texts = documents(o);
  std::vector<std::string> trainTexts;
  for (const auto& t : texts) trainTexts.push_back(t.substr(0, t.size() - t.size() / 10));
  const text::BpeTokenizer tok = text::BpeTokenizer::train(trainTexts, o.vocab, {"<|endoftext|>"});
  const int64_t eot = tok.token_to_id("<|endoftext|>");
  const Corpus corpus = tokenize(tok, texts, eot);
  std::printf("tokenizer: %lld tokens, %zu training and %zu held-out tokens from %zu documents\n",
              static_cast<long long>(tok.vocab_size()), corpus.train.size(), corpus.heldOut.size(), texts.size());

  const std::string workDir =
      !o.checkpoint.empty() ? o.checkpoint : (fs::temp_directory_path() / "cudnn-nn-gpt").string();
  fs::create_directories(workDir);
  const std::string trainBin = (fs::path(workDir) / "train.bin").string();
  write_tokens(trainBin, corpus.train);
  write_tokens((fs::path(workDir) / "val.bin").string(), corpus.heldOut);  // for scripts/gpt_torch.py
  if (!o.checkpoint.empty()) tok.save_tokenizer_json((fs::path(workDir) / "tokenizer.json").string());

  nn::DecoderLMConfig config;
  config.vocabSize = tok.vocab_size();
  config.nPositions = std::max<int64_t>(o.context, 256);
  config.nEmbd = o.nEmbd;
  config.nLayer = o.layers;
  config.nHead = o.heads;
  auto model = nn::make_gpt2(config);
  model->setActivationCheckpointing(o.checkpointActivations);
  if (device.is_cuda()) {
    model = std::dynamic_pointer_cast<nn::DecoderLM>(nn::convert(model, cudnn::backend));
    model->to(device);
  }
  const DType compute = o.amp == "bfloat16" ? DType::BFloat16 : DType::Float32;
  if (compute != DType::Float32) model->to(compute);
  nn::MasterWeights master(*model);
  nn::AdamW optimizer(master.groups(), nn::AdamW::Options{.lr = o.lr, .beta2 = 0.95, .weightDecay = o.weightDecay});
  nn::WarmupCosineLR schedule(optimizer, o.warmup, o.steps, o.lr / 10);

  auto tokens = std::make_shared<const nn::TokenFile>(trainBin);
  auto dataset = std::make_shared<nn::TokenDataset>(tokens, o.context, /*stride=*/1);
  nn::DataLoader loader(dataset,
                        {.batchSize = o.batch, .shuffle = true, .dropLast = true, .seed = o.seed, .device = device});
  nn::TrainingState state{model.get(), &optimizer, &schedule, nullptr, nullptr, &loader, 0, 0, 1};
  if (!o.resume.empty()) {
    nn::load_checkpoint(o.resume, state);
    std::printf("resumed from %s at step %lld\n", nn::checkpoint_file(o.resume).c_str(),
                static_cast<long long>(state.step));
  } else {
    loader.setEpoch(0);
  }
  std::unique_ptr<nn::TrainingLog> log;
  if (!o.log.empty()) log = std::make_unique<nn::TrainingLog>(o.log, !o.resume.empty());
  std::printf("model: %s\n", model->str().substr(0, model->str().find('\n')).c_str());

  nn::CrossEntropyCriterion criterion;
  std::vector<Tensor> b;
  double running = 0;
  int64_t runningCount = 0;
  const int64_t last = o.stopAt > 0 ? std::min(o.stopAt, o.steps) : o.steps;
  for (int64_t step = state.step + 1; step <= last; ++step) {
    model->zeroGradParameters();
    double loss = 0;
    for (int64_t micro = 0; micro < o.accum; ++micro) {
      if (!loader.next(b)) {
        loader.setEpoch(loader.epoch() + 1);
        loader.next(b);
      }
      const Tensor logits = model->forward(b[0]);
      const int64_t n = logits.size(0) * logits.size(1);
      const Tensor scores = logits.view({n, logits.size(2)}).to(DType::Float32);
      const Tensor targets = b[1].view({n});
      loss += criterion.forward(scores, targets) / static_cast<double>(o.accum);
      // each micro-batch's mean, 1/accum of the step's gradient
      const Tensor gy = criterion.backward(scores, targets).mul(1.0 / static_cast<double>(o.accum));
      model->backward(b[0], gy.view(logits.sizes()).to(compute));
    }
    master.gradsToMaster();
    nn::clipGradNorm(master.grads(), 1.0);
    optimizer.step();
    master.paramsToModel();
    schedule.step();
    state.step = step;
    running += loss;
    ++runningCount;
    if (log) log->maybeWriteStep({.kind = "step", .step = step, .loss = loss, .lr = optimizer.groupLr(0)}, 10);
    if (step % o.evalEvery == 0 || step == last) {
      const double heldOut = held_out_loss(*model, corpus.heldOut, o.context, device);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("step %lld: train loss %.4f, held-out loss %.6f (%.3f bits/token), lr %.3g, %.1f s\n",
                  static_cast<long long>(step), running / static_cast<double>(runningCount), heldOut,
                  heldOut / std::log(2.0), optimizer.groupLr(0), seconds);
      std::fflush(stdout);
      running = 0;
      runningCount = 0;
      if (log) log->write({.kind = "eval", .step = step, .loss = heldOut, .lr = optimizer.groupLr(0)});
      if (!o.checkpoint.empty()) nn::save_checkpoint(o.checkpoint, state);
    }
  }
  if (o.generate > 0 && last == o.steps) {
    model->evaluate();
    std::printf("--- %s", o.prompt.c_str());
    std::printf("%s\n", generate_text(*model, &tok, o, tok.encode(o.prompt), eot).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return samples::run_main("gpt", argc, argv, parse, run); }
