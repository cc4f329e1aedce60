// llm_benchmark: times decoder language models on one GPU as scripts/bench_torch_llm.py times
// Hugging Face transformers' models in PyTorch (the median of timed iterations after a warm-up,
// each synchronised; the same shapes):
//   - a training step of GPT-2 small's shape (vocab 50304, n_embd 768, 12 heads, --layers
//     blocks, --batch 8 x --seq 512 tokens) and of a Llama of the same width (12 heads, 4 kv heads,
//     SwiGLU 2048, RMSNorm, RoPE, vocab 32000): forward, the cross-entropy loss and its gradient,
//     backward, gradients to the float32 master weights, AdamW, weights back to 16 bits; with
//     --graph the whole step is captured once in a CUDA graph and its replays are timed
//     (capturable AdamW, Note [Capturable Adam] in nn/Adam.h; the loss left on the device); with
//     --checkpoint-activations every block recomputes its forward in backward
//     --sharded S the model in dist::ShardedDataParallel at stage S (1-3) at world size 1 (NCCL),
//     its collectives overlapped with the compute unless --no-overlap (what sharding costs
//     on one GPU: the gathers, the reduce-scatters and the copies of the flat buffers)
//     (DecoderLM::setActivationCheckpointing);
//   - decoding: a prompt of --prompt tokens (512; the prefill) then --new-tokens greedy tokens
//     (128) one step at a time through the KV cache (nn::generate, the step captured in a CUDA
//     graph unless --eager-decode), at each of --decode-batches (1,16): the prefill's time, a
//     decode step's time (the rest over the steps after the first token), tokens per second.
// Every row reports the peak device memory of its timed iterations and where it stands against the
// machine's limits (Note [Counted FLOPs and bytes]): a training step's model TFLOP/s against the
// dense 16-bit peak (--peak-tflops, 790: an H200's measured bfloat16 rate), a decode step's GB/s
// (its weights and the cache read once) against the copy bandwidth (--peak-gbps, 4300).
// --models picks gpt2, llama or both; --decode-batches none (or --no-train) leaves a part out.
// Usage: llm_benchmark [--dtype bfloat16|float16|float32] [--layers N] [--batch N] [--seq N]
//                      [--models gpt2,llama] [--iterations N] [--warmup N] [--json FILE]
//                      [--flags KEY=VALUE,...] [--prompt N] [--new-tokens N] [--no-train]
//                      [--decode-batches B,B,...|none] [--eager-decode] [--graph]
//                      [--checkpoint-activations] [--peak-tflops X] [--peak-gbps X]
//                      [--sharded 1|2|3] [--no-overlap]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/CrossEntropyCriterion.h"
#include "cudnn/core/Config.h"
#include "nn/AdamW.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/DecoderLM.h"
#include "nn/Generation.h"
#include "nn/MixedPrecision.h"
#include "samples/Args.h"
#include "tensor/Cuda.h"
#ifdef CUDNN_NN_LLM_BENCHMARK_DIST
#include "distributed/Dist.h"
#include "distributed/ShardedDataParallel.h"
#endif

namespace {

const char* kUsage =
    "usage: llm_benchmark [--dtype bfloat16|float16|float32] [--layers N] [--batch N] [--seq N]\n"
    "                     [--models gpt2,llama] [--iterations N] [--warmup N] [--json FILE]\n"
    "                     [--flags KEY=VALUE,...] [--prompt N] [--new-tokens N] [--no-train]\n"
    "                     [--decode-batches B,B,...|none] [--eager-decode] [--graph]\n"
    "                     [--checkpoint-activations] [--peak-tflops X] [--peak-gbps X]\n"
    "                     [--sharded 1|2|3] [--no-overlap]\n"
    "Times a GPT-2-small-shaped and a Llama training step (--batch 8 x --seq 512, AdamW over float32\n"
    "master weights) and greedy decoding through the KV cache (prompt 512, 128 new tokens, batches 1\n"
    "and 16; the decode step captured in a CUDA graph unless --eager-decode)\n"
    "on the GPU, each with its peak device memory; --graph captures the training step once in a CUDA\n"
    "graph (capturable AdamW, the loss left on the device) and times its replays; --checkpoint-activations\n"
    "recomputes every block's forward in the training step's backward instead of keeping its activations.\n"
    "Each row also reports its model TFLOP/s (training) or GB/s (decoding) against --peak-tflops (790)\n"
    "and --peak-gbps (4300), an H200's measured bfloat16 and copy rates.\n"
    "scripts/bench_torch_llm.py --ours FILE times\n"
    "transformers' GPT2LMHeadModel and LlamaForCausalLM in the same way and prints the ratios.\n";

using tensor::DType;
using tensor::Tensor;

struct Options {
  std::string dtype_name = "bfloat16", json_path, flags;
  int iterations = 10, warmup = 3;
  int64_t layers = 12;
  int64_t batch = 8, seq = 512;  // the training step's
  std::vector<std::string> models{"gpt2", "llama"};
  bool train = true;
  double peakTflops = 790, peakGbps = 4300;
  int64_t prompt = 512, newTokens = 128;
  std::vector<int64_t> decodeBatches{1, 16};
  bool eagerDecode = false;  // every decode step eagerly (GenerationOptions::cudaGraph = false)
  bool graph = false;        // the train step captured once as a CUDA graph, then replayed
  // the train step's blocks recompute their forward in backward (DecoderLM::setActivationCheckpointing)
  bool checkpointActivations = false;
  int sharded = 0;      // the train step in dist::ShardedDataParallel at this stage (0: not)
  bool overlap = true;  // its collectives on the group's stream (ShardedDataParallel::Options::overlap)
};

Options parse(int argc, char** argv) {
  Options o;
  samples::Args args(argc, argv, kUsage);
  samples::Flags()
      .choice("--dtype", o.dtype_name, {"bfloat16", "float16", "float32"})
      .integer("--layers", o.layers, 1, 128)
      .integer("--batch", o.batch, 1, 4096)
      .integer("--seq", o.seq, 1, 8192)
      .on("--models",
          [&o](samples::Args& a, const std::string& f) {
            const std::string v = a.value(f);
            if (v == "gpt2" || v == "llama") {
              o.models = {v};
            } else if (v == "gpt2,llama" || v == "llama,gpt2") {
              o.models = {"gpt2", "llama"};
            } else {
              a.fail(f + " expects gpt2, llama or gpt2,llama, got '" + v + "'");
            }
          })
      .on("--no-train", [&o](samples::Args&, const std::string&) { o.train = false; })
      .number("--peak-tflops", o.peakTflops, 1, 1e6)
      .number("--peak-gbps", o.peakGbps, 1, 1e6)
      .integer("--iterations", o.iterations, 1, 100000)
      .integer("--warmup", o.warmup, 0, 100000)
      .text("--json", o.json_path)
      .text("--flags", o.flags)
      .integer("--prompt", o.prompt, 1, 4096)
      .integer("--new-tokens", o.newTokens, 2, 4096)
      .on("--decode-batches",
          [&o](samples::Args& a, const std::string& f) {
            o.decodeBatches.clear();
            const std::string value = a.value(f);
            if (value == "none") return;
            std::stringstream list(value);
            for (std::string item; std::getline(list, item, ',');) {
              char* end = nullptr;
              const long long b = std::strtoll(item.c_str(), &end, 10);
              if (item.empty() || *end != '\0' || b < 1 || b > 1024) {
                a.fail(f + " expects batch sizes in [1, 1024] separated by commas, got '" + item + "'");
              }
              o.decodeBatches.push_back(b);
            }
            if (o.decodeBatches.empty()) a.fail(f + " expects at least one batch size, or none");
          })
      .set("--eager-decode", o.eagerDecode)
      .set("--graph", o.graph)
      .set("--checkpoint-activations", o.checkpointActivations)
      .integer("--sharded", o.sharded, 1, 3)
      .on("--no-overlap", [&o](samples::Args&, const std::string&) { o.overlap = false; })
      .parse(args);
  if (o.sharded && o.graph) args.fail("--sharded steps eagerly: leave out --graph");
  return o;
}

// The median of `iterations` synchronised runs after `warmup` runs (ms), and the peak device
// memory of those runs (MiB).
double timed(const std::function<void()>& fn, int iterations, int warmup, double& peakMib) {
  fn();
  tensor::cuda::synchronize();
  tensor::cuda::reset_peak_memory_stats();
  for (int i = 0; i < warmup; ++i) fn();
  tensor::cuda::synchronize();
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    tensor::cuda::synchronize();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  peakMib = static_cast<double>(tensor::cuda::memory_stats().peak_allocated_bytes) / 1048576.0;
  return times[times.size() / 2];
}

nn::DecoderLMConfig model_config(nn::DecoderKind kind, int64_t layers) {
  nn::DecoderLMConfig c;
  c.kind = kind;
  c.nEmbd = 768;
  c.nHead = 12;
  c.nLayer = layers;
  if (kind == nn::DecoderKind::GPT2) {
    c.vocabSize = 50304;  // GPT-2's 50257 padded to a multiple of 64, as nanoGPT and llm.c do
    c.nPositions = 1024;
  } else {
    c.vocabSize = 32000;
    c.nPositions = 2048;
    c.nKvHead = 4;
    c.intermediateSize = 2048;
    c.tied = false;
  }
  return c;
}

// Note [Counted FLOPs and bytes]
// The roofline figures count the work a row must do, not what our kernels happen to do:
//   - a training step: 6 x (the weights of the matrix products: q, k, v, o, the MLP, the head)
//     per token, plus 12 x n_layer x n_embd x seq per token for the attention's two products
//     forward and backward (the PaLM and nanoGPT convention: the whole square, although a causal
//     mask needs half of it, and no recompute under activation checkpointing);
//   - a decode step: every matrix product's weights read once (the B rows share the read) and
//     the keys and values of the cache read once per row, at the decode's mean length
//     prompt + new_tokens / 2. Norms, embeddings, biases and activations are left out (under 1%).
double matmul_weights(const nn::DecoderLMConfig& c) {
  const double E = static_cast<double>(c.nEmbd), kv = static_cast<double>(c.kvHeads() * c.headDim());
  const double mlp = c.kind == nn::DecoderKind::GPT2 ? 2 * E * 4 * E : 3 * E * static_cast<double>(c.intermediateSize);
  return static_cast<double>(c.nLayer) * (2 * E * E + 2 * E * kv + mlp) + static_cast<double>(c.vocabSize) * E;
}

double train_flops(const nn::DecoderLMConfig& c, int64_t batch, int64_t seq) {
  const double tokens = static_cast<double>(batch * seq);
  return tokens * (6 * matmul_weights(c) + 12.0 * static_cast<double>(c.nLayer * c.nEmbd * seq));
}

double decode_step_bytes(const nn::DecoderLMConfig& c, DType dt, int64_t batch, double meanLength) {
  const double bytes = static_cast<double>(tensor::itemsize(dt));
  const double cache = 2.0 * static_cast<double>(c.nLayer * batch * c.kvHeads() * c.headDim()) * meanLength;
  return bytes * (matmul_weights(c) + cache);
}

std::shared_ptr<nn::DecoderLM> gpu_model(const nn::DecoderLMConfig& c, DType dt) {
  auto model = c.kind == nn::DecoderKind::GPT2 ? nn::make_gpt2(c) : nn::make_llama(c);
  model = std::dynamic_pointer_cast<nn::DecoderLM>(nn::convert(model, cudnn::backend));
  model->to(tensor::Device::cuda(0));
  if (dt != DType::Float32) model->to(dt);
  return model;
}

tensor::Json train_row(const Options& o, nn::DecoderKind kind, const nn::DecoderLMConfig& c, double ms, double peak) {
  const int64_t batch = o.batch, seq = o.seq;
  const std::string name = nn::decoder_kind_name(kind);
  const double flops = train_flops(c, batch, seq), tflops = flops / (ms / 1000) / 1e12;
  const std::string sharding =
      o.sharded ? ", sharded stage " + std::to_string(o.sharded) + (o.overlap ? " overlapped" : " in order") : "";
  std::printf(
      "%s train step (%lld layers, batch %lld, seq %lld, %s%s%s%s): %.3f ms, %.0f tokens/s, %.0f TFLOP/s = %.0f%% "
      "of %.0f (peak %.0f MiB)\n",
      name.c_str(), static_cast<long long>(o.layers), static_cast<long long>(batch), static_cast<long long>(seq),
      o.dtype_name.c_str(), o.graph ? ", graphed" : ", eager",
      o.checkpointActivations ? ", activations checkpointed" : "", sharding.c_str(), ms,
      static_cast<double>(batch * seq) / (ms / 1000), tflops, 100 * tflops / o.peakTflops, o.peakTflops, peak);
  return tensor::Json::Object{{"model", name},
                              {"layers", o.layers},
                              {"batch", batch},
                              {"seq", seq},
                              {"ms", ms},
                              {"graphed", o.graph},
                              {"peak_mib", peak},
                              {"checkpoint_activations", o.checkpointActivations},
                              {"sharded_stage", o.sharded},
                              {"overlap", o.sharded ? o.overlap : false},
                              {"flops", flops},
                              {"tflops", tflops},
                              {"peak_tflops", o.peakTflops}};
}

Tensor random_tokens(const nn::DecoderLMConfig& c, int64_t batch, int64_t seq) {
  return tensor::uniform({batch, seq}, 0, static_cast<double>(c.vocabSize), tensor::default_generator(), DType::Float64)
      .floor()
      .to(tensor::Device::cuda(0), DType::Int64);
}

// --sharded: the same step through dist::ShardedDataParallel at world size 1 (its float32
// master shards stand for nn::MasterWeights)
tensor::Json bench_sharded_step(const Options& o, nn::DecoderKind kind, DType dt, const nn::DecoderLMConfig& c,
                                std::shared_ptr<nn::DecoderLM> net, const nn::AdamW::Options& adam) {
#ifdef CUDNN_NN_LLM_BENCHMARK_DIST
  (void)dt;
  const int64_t batch = o.batch, seq = o.seq;
  auto group = dist::init(dist::WorldInfo{}, 300);
  double ms = 0, peak = 0;
  {
    dist::ShardedDataParallel::Options so;
    so.stage = o.sharded;
    so.overlap = o.overlap;
    dist::ShardedDataParallel model(net, so, group);
    model.setOptimizer([&adam](std::vector<Tensor> p, std::vector<Tensor> g) {
      return std::make_unique<nn::AdamW>(std::move(p), std::move(g), adam);
    });
    nn::CriterionPtr criterion = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
    const Tensor tokens = random_tokens(c, batch, seq);
    const Tensor targets = tokens.view({batch * seq});
    auto step = [&] {
      model.zeroGradParameters();
      const Tensor& logits = model.forward(tokens);
      const Tensor scores = logits.view({batch * seq, c.vocabSize});
      criterion->forward(scores, targets);
      const Tensor& gy = criterion->backward(scores, targets);
      model.backward(tokens, gy.view(logits.sizes()));
      model.step();
    };
    ms = timed(step, o.iterations, o.warmup, peak);
  }
  group.reset();
  dist::destroy();
  return train_row(o, kind, c, ms, peak);
#else
  (void)o, (void)kind, (void)dt, (void)c, (void)net, (void)adam;
  throw tensor::Error("llm_benchmark: --sharded needs the distributed layer (built without NCCL or MPI)");
#endif
}

tensor::Json bench_train_step(const Options& o, nn::DecoderKind kind, DType dt) {
  const int64_t batch = o.batch, seq = o.seq;
  const nn::DecoderLMConfig c = model_config(kind, o.layers);
  if (seq > c.nPositions) {
    throw tensor::Error("llm_benchmark: --seq " + std::to_string(seq) + " is past the model's " +
                        std::to_string(c.nPositions) + " positions");
  }
  auto model = gpu_model(c, dt);
  model->setFreeIntermediateGradients(true);
  model->setActivationCheckpointing(o.checkpointActivations);
  const nn::AdamW::Options adam{.lr = 1e-4, .beta2 = 0.95, .weightDecay = 0.1, .capturable = o.graph};
  if (o.sharded) return bench_sharded_step(o, kind, dt, c, model, adam);
  nn::MasterWeights master(*model);
  nn::AdamW optimizer(master.groups(), adam);
  nn::CriterionPtr criterion = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
  // --graph: the loss stays on the device (a host read cannot be captured)
  auto* deviceLoss = o.graph ? dynamic_cast<cudnn::CrossEntropyCriterion*>(criterion.get()) : nullptr;
  if (o.graph && !deviceLoss) throw tensor::Error("llm_benchmark: --graph expects cudnn's CrossEntropyCriterion");
  const Tensor tokens = random_tokens(c, batch, seq);
  const Tensor targets = tokens.view({batch * seq});
  auto step = [&] {
    model->zeroGradParameters();
    const Tensor& logits = model->forward(tokens);
    const Tensor scores = logits.view({batch * seq, c.vocabSize});
    if (deviceLoss) {
      deviceLoss->lossOnDevice(scores, targets);
    } else {
      criterion->forward(scores, targets);
    }
    const Tensor& gy = criterion->backward(scores, targets);
    model->backward(tokens, gy.view(logits.sizes()));
    master.gradsToMaster();
    optimizer.step();
    master.paramsToModel();
  };
  std::function<void()> timedStep = step;
  tensor::cuda::Graph graph;
  if (o.graph) {
    for (int i = 0; i < 2; ++i) step();  // warm-up: plans, workspaces, the optimizer's state
    graph = tensor::cuda::Graph::capture(step);
    timedStep = [&graph] { graph.replay(); };
  }
  double peak = 0;
  const double ms = timed(timedStep, o.iterations, o.warmup, peak);
  return train_row(o, kind, c, ms, peak);
}

tensor::Json bench_decode(const Options& o, nn::DecoderKind kind, DType dt, int64_t batch) {
  const int64_t prompt = o.prompt, fresh = o.newTokens;
  const nn::DecoderLMConfig c = model_config(kind, o.layers);
  auto model = gpu_model(c, dt);
  model->evaluate();
  std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < prompt; ++t) prompts[b].push_back((b * 7919 + t * 104729) % c.vocabSize);
  }
  // the prefill alone is generate() of one token; a decode step is the rest of the time over the
  // fresh - 1 steps that follow (scripts/bench_torch_llm.py times transformers' generate alike)
  nn::GenerationOptions g;
  g.cudaGraph = !o.eagerDecode;
  g.maxNewTokens = 1;
  double peak = 0;
  const int iterations = std::max(1, o.iterations / 2), warmup = std::min(o.warmup, 1);
  const double prefillMs = timed([&] { nn::generate(*model, prompts, g); }, iterations, warmup, peak);
  g.maxNewTokens = fresh;  // greedy, no stop tokens: every row makes all of them
  const double ms = timed([&] { nn::generate(*model, prompts, g); }, iterations, warmup, peak);
  const double stepMs = (ms - prefillMs) / static_cast<double>(std::max<int64_t>(fresh - 1, 1));
  const std::string name = nn::decoder_kind_name(kind);
  const double stepBytes =
      decode_step_bytes(c, dt, batch, static_cast<double>(prompt) + static_cast<double>(fresh) / 2);
  const double gbps = stepBytes / (stepMs / 1000) / 1e9;
  std::printf(
      "%s decode (batch %lld, prompt %lld, %lld new tokens, %s%s): %.3f ms; prefill %.3f ms (%.0f tokens/s), "
      "%.3f ms a step (%.0f tokens/s, %.0f GB/s = %.1f%% of %.0f) (peak %.0f MiB)\n",
      name.c_str(), static_cast<long long>(batch), static_cast<long long>(prompt), static_cast<long long>(fresh),
      o.dtype_name.c_str(), o.eagerDecode ? ", eager" : ", graphed", ms, prefillMs, batch * prompt / (prefillMs / 1000),
      stepMs, static_cast<double>(batch) / (stepMs / 1000), gbps, 100 * gbps / o.peakGbps, o.peakGbps, peak);
  return tensor::Json::Object{{"model", name},           {"layers", o.layers},      {"batch", batch},
                              {"prompt", prompt},        {"new_tokens", fresh},     {"ms", ms},
                              {"prefill_ms", prefillMs}, {"step_ms", stepMs},       {"graphed", !o.eagerDecode},
                              {"peak_mib", peak},        {"step_bytes", stepBytes}, {"gbps", gbps},
                              {"peak_gbps", o.peakGbps}};
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!tensor::cuda::is_available()) {
    std::fprintf(stderr, "llm_benchmark: no CUDA device is visible (it times the cudnn backend only)\n");
    return 1;
  }
  try {
    if (!o.flags.empty()) cudnn::set_flags(o.flags);
    const DType dt = o.dtype_name == "float16"    ? DType::Float16
                     : o.dtype_name == "bfloat16" ? DType::BFloat16
                                                  : DType::Float32;
    tensor::Json::Array train, decode;
    for (const std::string& model : o.models) {
      const nn::DecoderKind kind = model == "gpt2" ? nn::DecoderKind::GPT2 : nn::DecoderKind::Llama;
      if (o.train) train.push_back(bench_train_step(o, kind, dt));
      for (const int64_t batch : o.decodeBatches) decode.push_back(bench_decode(o, kind, dt, batch));
    }
    const tensor::Json results =
        tensor::Json::Object{{"dtype", o.dtype_name}, {"train_step", train}, {"decode", decode}};
    if (!o.json_path.empty()) {
      std::ofstream f(o.json_path);
      f << results.dump() << "\n";
      if (!f) {
        std::fprintf(stderr, "llm_benchmark: cannot write %s\n", o.json_path.c_str());
        return 2;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llm_benchmark: %s\n", e.what());
    return 1;
  }
  return 0;
}
