// transformer_benchmark: times what issue 25 benchmarks against PyTorch on one GPU, in the way
// scripts/bench_torch_transformer.py times PyTorch (the median of timed iterations after a
// warm-up, each iteration synchronised):
//   - cudnn::sdpa forward and forward+backward at GPT-2-small shapes (batch 8, 12 heads,
//     sequence 1024, head size 64), causal and not;
//   - a TransformerEncoderLayer training step (d_model 768, 12 heads, feed-forward 3072,
//     sequence 512, batch 16, GELU, batch first, no dropout): forward, the gradient of
//     mean(y^2), backward and a fused Adam step, with the peak device memory of the timed steps
//     (intermediate gradients freed as soon as backward has used them, as PyTorch frees them);
//   - LayerNorm(768) over 16 x 512 rows, forward and forward+backward, on our kernels and on
//     cuDNN's graph-API layer norm (layernorm.engine=ours / cudnn), to pick the default;
//   - the Fashion-MNIST sample's Vision Transformer (samples/VisionTransformer.h: 7x7 patches,
//     3 pre-norm layers of width 64, dropout 0.1) training step at batch 128: forward, the
//     cross-entropy loss and its gradient, backward and a fused Adam step, all on the GPU;
//   - a language model's loss: CrossEntropyCriterion over a 32000-word vocabulary for 16 x 512
//     tokens, the loss and the loss with its gradient.
// Every row reports the peak device memory of its timed iterations (inputs included).
// Usage: transformer_benchmark [--dtype float16|bfloat16|float32] [--iterations N] [--warmup N]
//                              [--json FILE] [--flags KEY=VALUE,...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "cudnn/ops/attention.h"
#include "cudnn/ops/layer_norm.h"
#include "nn/Adam.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/LayerNorm.h"
#include "nn/TransformerEncoderLayer.h"
#include "samples/Args.h"
#include "samples/VisionTransformer.h"
#include "tensor/Cuda.h"

namespace {

const char* kUsage =
    "usage: transformer_benchmark [--dtype float16|bfloat16|float32] [--iterations N] [--warmup N]\n"
    "                             [--json FILE] [--flags KEY=VALUE,...]\n"
    "Times cudnn::sdpa (batch 8, 12 heads, sequence 1024, head size 64, and b1 h12 s128 d64; causal and\n"
    "not) forward and\n"
    "forward+backward, and a TransformerEncoderLayer(768, 12, 3072, GELU) training step at batch 16,\n"
    "sequence 512 (Adam), LayerNorm(768) over 8192 rows on both engines (layernorm.engine=ours and\n"
    "cudnn), the Fashion-MNIST ViT sample's step at batch 128 (Adam), and cross-entropy over a\n"
    "32000-word vocabulary for 8192 tokens, on the GPU, each with its peak device memory. "
    "scripts/bench_torch_transformer.py --ours FILE times PyTorch's twins in the\n"
    "same way and prints the ratios.\n";

using tensor::DType;
using tensor::Tensor;

// The median of `iterations` synchronised runs of fn after `warmup` runs, in ms.
double median_ms(const std::function<void()>& fn, int iterations, int warmup) {
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
  return times[times.size() / 2];
}

// median_ms, and the peak device memory (MiB) its iterations reached above what was allocated
// before (the inputs and the network's state count: they are allocated when it starts).
double timed(const std::function<void()>& fn, int iterations, int warmup, double& peak_mib) {
  fn();  // first-call allocations (plans, workspaces, module buffers) happen here
  tensor::cuda::synchronize();
  tensor::cuda::reset_peak_memory_stats();
  const double ms = median_ms(fn, iterations, warmup);
  peak_mib = static_cast<double>(tensor::cuda::memory_stats().peak_allocated_bytes) / 1048576.0;
  return ms;
}

// The command line's choices.
struct Options {
  std::string dtype_name = "float16", json_path, flags;
  int iterations = 20, warmup = 5;
};

// The options (--help prints the usage and exits 0).
Options parse(int argc, char** argv) {
  Options o;
  samples::Args args(argc, argv, kUsage);
  samples::Flags()
      .choice("--dtype", o.dtype_name, {"float16", "bfloat16", "float32"})
      .integer("--iterations", o.iterations, 1, 100000)
      .integer("--warmup", o.warmup, 0, 100000)
      .text("--json", o.json_path)
      .text("--flags", o.flags)
      .parse(args);
  return o;
}

// A forward pass and a training pass (the forward, then the backward) timed, each with its
// peak memory and the path the GPU took.
struct Passes {
  double forward_ms = 0, forward_peak = 0, train_ms = 0, train_peak = 0;
  std::string forward_path, backward_path;

  // The --json row: what was run (`key`: `value`), then the times, peaks and paths.
  tensor::Json row(const char* key, tensor::Json value) const {
    return tensor::Json::Object{{key, std::move(value)},         {"forward_ms", forward_ms},
                                {"train_ms", train_ms},          {"forward_peak_mib", forward_peak},
                                {"train_peak_mib", train_peak},  {"forward_path", forward_path},
                                {"backward_path", backward_path}};
  }
};

// What every benchmark below runs with.
struct Bench {
  const Options& o;
  DType dt;
  tensor::Device gpu;
  double measure(const std::function<void()>& fn, double& peak_mib) const {
    return timed(fn, o.iterations, o.warmup, peak_mib);
  }
  // `path(backward)` names the path of the last forward or backward call.
  Passes passes(const std::function<void()>& forward, const std::function<void()>& backward,
                const std::string& (*path)(bool backward)) const {
    Passes p;
    p.forward_ms = measure(forward, p.forward_peak);
    p.forward_path = path(false);
    p.train_ms = measure(
        [&] {
          forward();
          backward();
        },
        p.train_peak);
    p.backward_path = path(true);
    return p;
  }
};

// cudnn::sdpa forward and forward+backward at GPT-2-small shapes, causal and not, and at one
// short sequence (b1 h12 s128 d64), where the per-call host work (plan lookup, variant pack,
// sequence lengths) is a large part of the time.
tensor::Json bench_attention(const Bench& b) {
  const DType dt = b.dt;
  const tensor::Device gpu = b.gpu;
  tensor::Json attention = tensor::Json::Array{};
  struct Shape4 {
    int64_t B, H, S, D;
  };
  for (const auto& [B, H, S, D] : {Shape4{8, 12, 1024, 64}, Shape4{1, 12, 128, 64}}) {
    for (bool causal : {false, true}) {
      const Tensor q = tensor::normal({B, H, S, D}, 0, 1, tensor::default_generator(), dt, gpu);
      const Tensor k = tensor::normal({B, H, S, D}, 0, 1, tensor::default_generator(), dt, gpu);
      const Tensor v = tensor::normal({B, H, S, D}, 0, 1, tensor::default_generator(), dt, gpu);
      const Tensor g = tensor::normal({B, H, S, D}, 0, 1, tensor::default_generator(), dt, gpu);
      nn::SdpaOptions o;
      o.causal = causal;
      nn::SdpaSaved saved;
      Tensor out;
      const Passes p = b.passes(
          [&] {
            out = Tensor();  // as PyTorch's loop, which drops the last output before the next call
            out = cudnn::sdpa(q, k, v, o, &saved);
          },
          [&] { cudnn::sdpa_backward(q, k, v, out, g, o, saved); }, cudnn::sdpa_last_path);
      std::printf(
          "sdpa %s b%lld h%lld s%lld d%lld causal=%d: forward %.3f ms (peak %.0f MiB), forward+backward %.3f ms "
          "(peak %.0f MiB) (%s; %s)\n",
          b.o.dtype_name.c_str(), static_cast<long long>(B), static_cast<long long>(H), static_cast<long long>(S),
          static_cast<long long>(D), causal ? 1 : 0, p.forward_ms, p.forward_peak, p.train_ms, p.train_peak,
          p.forward_path.c_str(), p.backward_path.c_str());
      tensor::Json row = p.row("causal", causal);
      for (const auto& [key, value] : {std::pair<const char*, int64_t>{"b", B}, {"h", H}, {"s", S}, {"d", D}}) {
        row.set(key, value);
      }
      attention.push(std::move(row));
    }
  }
  return attention;
}

// A TransformerEncoderLayer training step: forward, d mean(y^2), backward, Adam.
tensor::Json bench_encoder_step(const Bench& b) {
  const int64_t E = 768, heads = 12, F = 3072, seq = 512, batch = 16;
  auto layer = std::make_shared<nn::TransformerEncoderLayer>(E, heads, F, 0.0, "gelu", /*batchFirst=*/true);
  nn::ModulePtr net = nn::convert(layer, cudnn::backend);
  net->to(b.gpu);
  net->to(b.dt);
  net->setGradInputNeeded(false);
  net->setFreeIntermediateGradients(true);  // as convnet_benchmark and PyTorch's autograd do
  nn::Adam adam(*net, 1e-4);
  const Tensor x = tensor::normal({batch, seq, E}, 0, 1, tensor::default_generator(), b.dt, b.gpu);
  auto step = [&] {
    adam.zeroGrad();
    const Tensor& y = net->forward(x);
    const Tensor gy = y.mul(2.0 / static_cast<double>(y.numel()));  // d mean(y^2) / dy
    net->backward(x, gy);
    adam.step();
  };
  double peak = 0;
  const double ms = b.measure(step, peak);
  // what stays allocated between steps: parameters, gradients, Adam's state, the modules'
  // forward buffers, x (docs/performance.md accounts for it buffer by buffer)
  const double held = static_cast<double>(tensor::cuda::memory_stats().allocated_bytes) / 1048576.0;
  std::printf(
      "encoder layer d%lld h%lld ff%lld s%lld b%lld %s Adam step: %.3f ms, peak %.0f MiB (%.0f MiB between "
      "steps)\n",
      static_cast<long long>(E), static_cast<long long>(heads), static_cast<long long>(F), static_cast<long long>(seq),
      static_cast<long long>(batch), b.o.dtype_name.c_str(), ms, peak, held);
  return tensor::Json::Object{{"step_ms", ms}, {"peak_mib", peak}, {"held_mib", held}, {"optimizer", "adam"}};
}

// LayerNorm: our kernels against cuDNN's graph-API layer norm (layernorm.engine).
tensor::Json bench_layernorm(const Bench& b) {
  const int64_t rows = 16 * 512, E = 768;
  tensor::Json norms = tensor::Json::Array{};
  const Tensor x = tensor::normal({rows, E}, 0, 1, tensor::default_generator(), b.dt, b.gpu);
  const Tensor gy = tensor::normal({rows, E}, 0, 1, tensor::default_generator(), b.dt, b.gpu);
  for (cudnn::LayerNormEngine engine : {cudnn::LayerNormEngine::Ours, cudnn::LayerNormEngine::Cudnn}) {
    cudnn::ScopedLayerNormEngine use(engine);
    auto norm = nn::convert(std::make_shared<nn::LayerNorm>(tensor::Shape{E}), cudnn::backend);
    norm->to(b.gpu);
    norm->to(b.dt);
    const Passes p = b.passes([&] { norm->forward(x); }, [&] { norm->backward(x, gy); }, cudnn::layer_norm_last_path);
    const char* name = cudnn::layer_norm_engine_name(engine);
    std::printf("layernorm [%lld x %lld] %s engine=%s: forward %.4f ms, forward+backward %.4f ms (%s; %s)\n",
                static_cast<long long>(rows), static_cast<long long>(E), b.o.dtype_name.c_str(), name, p.forward_ms,
                p.train_ms, p.forward_path.c_str(), p.backward_path.c_str());
    norms.push(p.row("engine", name));
  }
  return norms;
}

// The Fashion-MNIST ViT sample's step: forward, cross-entropy, backward, Adam.
tensor::Json bench_vit_step(const Bench& b) {
  const int64_t batch = 128;
  samples::register_vit_types();
  nn::ModulePtr net = nn::convert(samples::vision_transformer(), cudnn::backend);
  net->to(b.gpu);
  net->to(b.dt);
  net->setGradInputNeeded(false);  // the images need no gradient, as in the sample
  net->setFreeIntermediateGradients(true);
  nn::CriterionPtr criterion = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
  nn::Adam adam(*net, 1e-3);
  const Tensor x = tensor::normal({batch, 1, 28, 28}, 0, 1, tensor::default_generator(), b.dt, b.gpu);
  const Tensor labels =
      tensor::uniform({batch}, 0, 10, tensor::default_generator(), DType::Float64).floor().to(b.gpu, DType::Int64);
  auto step = [&] {
    adam.zeroGrad();
    const Tensor& scores = net->forward(x);
    criterion->forward(scores, labels);
    net->backward(x, criterion->backward(scores, labels));
    adam.step();
  };
  double peak = 0;
  const double ms = b.measure(step, peak);
  std::printf(
      "vit (fashion_mnist --model vit: dim 64, 3 layers, 17 tokens) b%lld %s Adam step: %.3f ms, peak %.0f MiB\n",
      static_cast<long long>(batch), b.o.dtype_name.c_str(), ms, peak);
  return tensor::Json::Object{{"step_ms", ms}, {"peak_mib", peak}, {"batch", batch}};
}

const std::string& lm_loss_path(bool) {
  static const std::string path = "cudnn.CrossEntropyCriterion";
  return path;
}

// A language model's loss: cross-entropy over a 32000-word vocabulary for 16 x 512 tokens, the
// loss alone and with its gradient (the scores' row count is the case of Note [Softmax over the
// channels of one position] in cudnn/ops/softmax.cpp).
tensor::Json bench_lm_loss(const Bench& b) {
  const int64_t tokens = 16 * 512, vocab = 32000;
  nn::CriterionPtr criterion = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
  const Tensor scores = tensor::normal({tokens, vocab}, 0, 1, tensor::default_generator(), b.dt, b.gpu);
  const Tensor labels =
      tensor::uniform({tokens}, 0, vocab, tensor::default_generator(), DType::Float64).floor().to(b.gpu, DType::Int64);
  const Passes p =
      b.passes([&] { criterion->forward(scores, labels); }, [&] { criterion->backward(scores, labels); }, lm_loss_path);
  std::printf(
      "cross-entropy [%lld x %lld] %s: loss %.3f ms (peak %.0f MiB), loss and gradient %.3f ms (peak %.0f MiB)\n",
      static_cast<long long>(tokens), static_cast<long long>(vocab), b.o.dtype_name.c_str(), p.forward_ms,
      p.forward_peak, p.train_ms, p.train_peak);
  tensor::Json row = p.row("vocab", vocab);
  row.set("tokens", tokens);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!tensor::cuda::is_available()) {
    std::fprintf(stderr, "transformer_benchmark: no CUDA device is visible (it times the cudnn backend only)\n");
    return 1;
  }
  if (!o.flags.empty()) cudnn::set_flags(o.flags);
  const DType dt = o.dtype_name == "float16"    ? DType::Float16
                   : o.dtype_name == "bfloat16" ? DType::BFloat16
                                                : DType::Float32;
  const Bench bench{o, dt, tensor::Device::cuda(0)};
  // the benchmarks run in this order, as they are listed
  const tensor::Json results = tensor::Json::Object{{"dtype", o.dtype_name},
                                                    {"sdpa", bench_attention(bench)},
                                                    {"encoder_step", bench_encoder_step(bench)},
                                                    {"layernorm", bench_layernorm(bench)},
                                                    {"vit_step", bench_vit_step(bench)},
                                                    {"lm_loss", bench_lm_loss(bench)}};
  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    f << results.dump() << "\n";
    if (!f) {
      std::fprintf(stderr, "transformer_benchmark: cannot write %s\n", o.json_path.c_str());
      return 2;
    }
  }
  return 0;
}
