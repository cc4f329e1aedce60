// transformer_benchmark: times what issue 25 benchmarks against PyTorch on one GPU, in the way
// scripts/bench_torch_transformer.py times PyTorch (the median of timed iterations after a
// warm-up, each iteration synchronised):
//   - cudnn::sdpa forward and forward+backward at GPT-2-small shapes (batch 8, 12 heads,
//     sequence 1024, head size 64), causal and not;
//   - a TransformerEncoderLayer training step (d_model 768, 12 heads, feed-forward 3072,
//     sequence 512, batch 16, GELU, batch first, no dropout): forward, the gradient of
//     mean(y^2), backward and a fused Adam step, with the peak device memory of the timed steps
//     (intermediate gradients freed as soon as backward has used them, as PyTorch frees them).
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
#include "nn/Adam.h"
#include "nn/TransformerEncoderLayer.h"
#include "samples/Args.h"
#include "tensor/Cuda.h"

namespace {

const char* kUsage =
    "usage: transformer_benchmark [--dtype float16|bfloat16|float32] [--iterations N] [--warmup N]\n"
    "                             [--json FILE] [--flags KEY=VALUE,...]\n"
    "Times cudnn::sdpa (batch 8, 12 heads, sequence 1024, head size 64; causal and not) forward and\n"
    "forward+backward, and a TransformerEncoderLayer(768, 12, 3072, GELU) training step at batch 16,\n"
    "sequence 512 (Adam), on the GPU. scripts/bench_torch_transformer.py --ours FILE times PyTorch's\n"
    "twins in the same way and prints the ratios.\n";

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

}  // namespace

int main(int argc, char** argv) {
  samples::Args args(argc, argv, kUsage);
  std::string dtype_name = "float16", json_path, flags;
  int iterations = 20, warmup = 5;
  while (args.more()) {
    const std::string flag = args.flag();
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (flag == "--dtype") {
      dtype_name = args.choice(flag, {"float16", "bfloat16", "float32"});
    } else if (flag == "--iterations") {
      iterations = static_cast<int>(args.integer(flag, 1, 100000));
    } else if (flag == "--warmup") {
      warmup = static_cast<int>(args.integer(flag, 0, 100000));
    } else if (flag == "--json") {
      json_path = args.value(flag);
    } else if (flag == "--flags") {
      flags = args.value(flag);
    } else {
      args.fail("unknown option " + flag);
    }
  }
  if (!tensor::cuda::is_available()) {
    std::fprintf(stderr, "transformer_benchmark: no CUDA device is visible (it times the cudnn backend only)\n");
    return 1;
  }
  if (!flags.empty()) cudnn::set_flags(flags);
  const DType dt = dtype_name == "float16"    ? DType::Float16
                   : dtype_name == "bfloat16" ? DType::BFloat16
                                              : DType::Float32;
  const tensor::Device gpu = tensor::Device::cuda(0);
  tensor::Json results = tensor::Json::Object{};
  results.set("dtype", tensor::Json(dtype_name));

  // ---- attention ----
  const int64_t B = 8, H = 12, S = 1024, D = 64;
  tensor::Json attention = tensor::Json::Array{};
  for (bool causal : {false, true}) {
    const Tensor q = tensor::normal({B, H, S, D}, 0, 1, tensor::default_generator(), dt, gpu);
    const Tensor k = tensor::normal({B, H, S, D}, 0, 1, tensor::default_generator(), dt, gpu);
    const Tensor v = tensor::normal({B, H, S, D}, 0, 1, tensor::default_generator(), dt, gpu);
    const Tensor g = tensor::normal({B, H, S, D}, 0, 1, tensor::default_generator(), dt, gpu);
    nn::SdpaOptions o;
    o.causal = causal;
    nn::SdpaSaved saved;
    Tensor out;
    const double fwd = median_ms([&] { out = cudnn::sdpa(q, k, v, o, &saved); }, iterations, warmup);
    const std::string fwd_path = cudnn::sdpa_last_path();
    const double fwd_bwd = median_ms(
        [&] {
          out = cudnn::sdpa(q, k, v, o, &saved);
          cudnn::sdpa_backward(q, k, v, out, g, o, saved);
        },
        iterations, warmup);
    const std::string bwd_path = cudnn::sdpa_last_path(true);
    std::printf("sdpa %s b%lld h%lld s%lld d%lld causal=%d: forward %.3f ms, forward+backward %.3f ms (%s; %s)\n",
                dtype_name.c_str(), static_cast<long long>(B), static_cast<long long>(H), static_cast<long long>(S),
                static_cast<long long>(D), causal ? 1 : 0, fwd, fwd_bwd, fwd_path.c_str(), bwd_path.c_str());
    tensor::Json row = tensor::Json::Object{};
    row.set("causal", tensor::Json(causal));
    row.set("forward_ms", tensor::Json(fwd));
    row.set("train_ms", tensor::Json(fwd_bwd));
    row.set("forward_path", tensor::Json(fwd_path));
    row.set("backward_path", tensor::Json(bwd_path));
    attention.push(row);
  }
  results.set("sdpa", attention);

  // ---- encoder layer step ----
  {
    const int64_t E = 768, heads = 12, F = 3072, seq = 512, batch = 16;
    auto layer = std::make_shared<nn::TransformerEncoderLayer>(E, heads, F, 0.0, "gelu", /*batchFirst=*/true);
    nn::ModulePtr net = nn::convert(layer, cudnn::backend);
    net->to(gpu);
    net->to(dt);
    net->setGradInputNeeded(false);
    net->setFreeIntermediateGradients(true);  // as convnet_benchmark and PyTorch's autograd do
    nn::Adam adam(*net, 1e-4);
    const Tensor x = tensor::normal({batch, seq, E}, 0, 1, tensor::default_generator(), dt, gpu);
    auto step = [&] {
      adam.zeroGrad();
      const Tensor& y = net->forward(x);
      const Tensor gy = y.mul(2.0 / static_cast<double>(y.numel()));  // d mean(y^2) / dy
      net->backward(x, gy);
      adam.step();
    };
    step();
    tensor::cuda::synchronize();
    tensor::cuda::reset_peak_memory_stats();
    const double ms = median_ms(step, iterations, warmup);
    const double peak = tensor::cuda::memory_stats().peak_allocated_bytes / 1048576.0;
    std::printf("encoder layer d%lld h%lld ff%lld s%lld b%lld %s Adam step: %.3f ms, peak %.0f MiB\n",
                static_cast<long long>(E), static_cast<long long>(heads), static_cast<long long>(F),
                static_cast<long long>(seq), static_cast<long long>(batch), dtype_name.c_str(), ms, peak);
    tensor::Json row = tensor::Json::Object{};
    row.set("step_ms", tensor::Json(ms));
    row.set("peak_mib", tensor::Json(peak));
    row.set("optimizer", tensor::Json(std::string("adam")));
    results.set("encoder_step", row);
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << results.dump() << "\n";
    if (!f) {
      std::fprintf(stderr, "transformer_benchmark: cannot write %s\n", json_path.c_str());
      return 2;
    }
  }
  return 0;
}
