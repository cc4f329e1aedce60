// norm_benchmark: times cudnn.GroupNorm on both engines of the flag groupnorm.engine (kernel: our
// kernels; cudnn: cuDNN's graph-API layer norm over a group a row, cudnn/ops/group_norm.h), and
// cudnn.RMSNorm on both engines of rmsnorm.engine (kernel: our kernels; cudnn: cuDNN's graph-API
// RMS norm, cudnn/ops/rms_norm.h), to pick their defaults, in the way scripts/bench_torch_norm.py
// times torch.nn.GroupNorm and torch.nn.RMSNorm (the median of timed iterations after a warm-up,
// each iteration synchronised):
//   - forward (training mode: the statistics are kept) and forward+backward (gradInput, then
//     gradWeight and gradBias), at the shapes of ResNets and diffusion U-Nets with group norm:
//     N32 C256 32x32 G32, N8 C512 64x64 G32, N16 C128 128x128 G32, and one group a channel
//     (an InstanceNorm without running statistics) N16 C64 128x128 G64;
//   - RMSNorm over the hidden size of decoder LMs, [tokens x hidden]: 8192 x 768 (GPT-2 small),
//     8192 x 2048, 4096 x 4096 (Llama-7B) and 2048 x 8192 (Llama-70B), weight and eps 1e-6;
//   - float16, bfloat16 and float32 (--dtype picks one); --norm groupnorm|rmsnorm picks a family.
// Each row prints its times, the effective bandwidth of the forward (x read and y written once:
// the least any engine moves) and the path each pass took (group_norm_last_path); --json writes
// them for scripts/bench_torch_norm.py --ours FILE, which prints the ratios.
// Usage: norm_benchmark [--dtype all|float16|bfloat16|float32] [--norm all|groupnorm|rmsnorm]
//                       [--iterations N] [--warmup N] [--json FILE] [--flags KEY=VALUE,...]
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
#include "cudnn/ops/group_norm.h"
#include "cudnn/ops/rms_norm.h"
#include "nn/GroupNorm.h"
#include "nn/RMSNorm.h"
#include "samples/Args.h"
#include "tensor/Cuda.h"
#include "tensor/Json.h"

namespace {

const char* kUsage =
    "usage: norm_benchmark [--dtype all|float16|bfloat16|float32] [--norm all|groupnorm|rmsnorm]\n"
    "                      [--iterations N] [--warmup N] [--json FILE] [--flags KEY=VALUE,...]\n"
    "Times cudnn.GroupNorm forward and forward+backward on both engines of groupnorm.engine (kernel:\n"
    "our kernels; cudnn: cuDNN's layer norm over a group a row) at N32 C256 32x32 G32, N8 C512 64x64\n"
    "G32, N16 C128 128x128 G32 and N16 C64 128x128 G64, in float16, bfloat16 and float32 (default\n"
    "all), on the GPU; and cudnn.RMSNorm on both engines of rmsnorm.engine at [tokens x hidden]\n"
    "8192 x 768, 8192 x 2048, 4096 x 4096 and 2048 x 8192. scripts/bench_torch_norm.py --ours FILE\n"
    "times torch.nn.GroupNorm and torch.nn.RMSNorm in the same way and prints the ratios.\n";

using tensor::DType;
using tensor::Tensor;

// The median of `iterations` synchronised runs of fn after `warmup` runs, in ms (as
// transformer_benchmark's).
double median_ms(const std::function<void()>& fn, int iterations, int warmup) {
  fn();  // first-call work (plans, module buffers) before the warm-up
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

struct Options {
  std::string dtype_name = "all", norm = "all", json_path, flags;
  int iterations = 50, warmup = 10;
};

Options parse(int argc, char** argv) {
  Options o;
  samples::Args args(argc, argv, kUsage);
  samples::Flags()
      .choice("--dtype", o.dtype_name, {"all", "float16", "bfloat16", "float32"})
      .choice("--norm", o.norm, {"all", "groupnorm", "rmsnorm"})
      .integer("--iterations", o.iterations, 1, 100000)
      .integer("--warmup", o.warmup, 0, 100000)
      .on("--json", [&o](samples::Args& a, const std::string& flag) { a.writable(flag, o.json_path = a.value(flag)); })
      .text("--flags", o.flags)
      .parse(args);
  return o;
}

struct Shape {
  int64_t n, c, h, w, groups;
};
constexpr Shape kShapes[] = {
    {32, 256, 32, 32, 32}, {8, 512, 64, 64, 32}, {16, 128, 128, 128, 32}, {16, 64, 128, 128, 64}};

// One shape in one dtype on one engine: a row of the table and of --json.
tensor::Json bench(const Options& o, const Shape& s, DType dt, cudnn::GroupNormEngine engine) {
  const tensor::Device gpu = tensor::Device::cuda(0);
  cudnn::ScopedGroupNormEngine use(engine);
  nn::ModulePtr norm = nn::convert(std::make_shared<nn::GroupNorm>(s.groups, s.c), cudnn::backend);
  norm->to(gpu);
  norm->to(dt);
  const tensor::Shape shape{s.n, s.c, s.h, s.w};
  const Tensor x = tensor::normal(shape, 0, 1, tensor::default_generator(), dt, gpu);
  const Tensor gy = tensor::normal(shape, 0, 1, tensor::default_generator(), dt, gpu);
  const double forward_ms = median_ms([&] { norm->forward(x); }, o.iterations, o.warmup);
  const std::string forward_path = cudnn::group_norm_last_path();
  const double train_ms = median_ms(
      [&] {
        norm->forward(x);
        norm->backward(x, gy);
      },
      o.iterations, o.warmup);
  const std::string backward_path = cudnn::group_norm_last_path(true);
  const double bytes = 2.0 * static_cast<double>(x.numel()) * static_cast<double>(tensor::itemsize(dt));
  const double forward_gbps = bytes / (forward_ms * 1e-3) / 1e9;
  const char* name = cudnn::group_norm_engine_name(engine);
  std::printf(
      "groupnorm N%lld C%lld %lldx%lld G%lld %-8s engine=%-6s forward %8.4f ms (%6.0f GB/s), forward+backward "
      "%8.4f ms (%s; %s)\n",
      static_cast<long long>(s.n), static_cast<long long>(s.c), static_cast<long long>(s.h),
      static_cast<long long>(s.w), static_cast<long long>(s.groups), tensor::name(dt), name, forward_ms, forward_gbps,
      train_ms, forward_path.c_str(), backward_path.c_str());
  std::fflush(stdout);
  return tensor::Json::Object{{"n", s.n},
                              {"c", s.c},
                              {"h", s.h},
                              {"w", s.w},
                              {"groups", s.groups},
                              {"dtype", tensor::name(dt)},
                              {"engine", name},
                              {"forward_ms", forward_ms},
                              {"train_ms", train_ms},
                              {"forward_gbps", forward_gbps},
                              {"forward_path", forward_path},
                              {"backward_path", backward_path}};
}

// RMSNorm's rows: [tokens x hidden]
struct RowShape {
  int64_t tokens, hidden;
};
constexpr RowShape kRowShapes[] = {{8192, 768}, {8192, 2048}, {4096, 4096}, {2048, 8192}};

tensor::Json bench_rms(const Options& o, const RowShape& s, DType dt, cudnn::RMSNormEngine engine) {
  const tensor::Device gpu = tensor::Device::cuda(0);
  cudnn::ScopedRMSNormEngine use(engine);
  nn::ModulePtr norm = nn::convert(std::make_shared<nn::RMSNorm>(tensor::Shape{s.hidden}, 1e-6), cudnn::backend);
  norm->to(gpu);
  norm->to(dt);
  const tensor::Shape shape{s.tokens, s.hidden};
  const Tensor x = tensor::normal(shape, 0, 1, tensor::default_generator(), dt, gpu);
  const Tensor gy = tensor::normal(shape, 0, 1, tensor::default_generator(), dt, gpu);
  const double forward_ms = median_ms([&] { norm->forward(x); }, o.iterations, o.warmup);
  const std::string forward_path = cudnn::rms_norm_last_path();
  const double train_ms = median_ms(
      [&] {
        norm->forward(x);
        norm->backward(x, gy);
      },
      o.iterations, o.warmup);
  const std::string backward_path = cudnn::rms_norm_last_path(true);
  const double bytes = 2.0 * static_cast<double>(x.numel()) * static_cast<double>(tensor::itemsize(dt));
  const double forward_gbps = bytes / (forward_ms * 1e-3) / 1e9;
  const char* name = cudnn::rms_norm_engine_name(engine);
  std::printf(
      "rmsnorm [%lld x %lld] %-8s engine=%-6s forward %8.4f ms (%6.0f GB/s), forward+backward %8.4f ms (%s; %s)\n",
      static_cast<long long>(s.tokens), static_cast<long long>(s.hidden), tensor::name(dt), name, forward_ms,
      forward_gbps, train_ms, forward_path.c_str(), backward_path.c_str());
  std::fflush(stdout);
  return tensor::Json::Object{{"tokens", s.tokens},
                              {"hidden", s.hidden},
                              {"dtype", tensor::name(dt)},
                              {"engine", name},
                              {"forward_ms", forward_ms},
                              {"train_ms", train_ms},
                              {"forward_gbps", forward_gbps},
                              {"forward_path", forward_path},
                              {"backward_path", backward_path}};
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!tensor::cuda::is_available()) {
    std::fprintf(stderr, "norm_benchmark: no CUDA device is visible (it times the cudnn backend only)\n");
    return 1;
  }
  if (!o.flags.empty()) cudnn::set_flags(o.flags);
  std::vector<DType> dtypes;
  if (o.dtype_name == "all" || o.dtype_name == "float16") dtypes.push_back(DType::Float16);
  if (o.dtype_name == "all" || o.dtype_name == "bfloat16") dtypes.push_back(DType::BFloat16);
  if (o.dtype_name == "all" || o.dtype_name == "float32") dtypes.push_back(DType::Float32);
  tensor::Json rows = tensor::Json::Array{}, rms_rows = tensor::Json::Array{};
  for (DType dt : dtypes) {
    if (o.norm != "rmsnorm") {
      for (const Shape& s : kShapes) {
        for (cudnn::GroupNormEngine engine : {cudnn::GroupNormEngine::Kernel, cudnn::GroupNormEngine::Cudnn}) {
          rows.push(bench(o, s, dt, engine));
        }
      }
    }
    if (o.norm != "groupnorm") {
      for (const RowShape& s : kRowShapes) {
        for (cudnn::RMSNormEngine engine : {cudnn::RMSNormEngine::Kernel, cudnn::RMSNormEngine::Cudnn}) {
          rms_rows.push(bench_rms(o, s, dt, engine));
        }
      }
    }
  }
  const tensor::Json results = tensor::Json::Object{{"iterations", o.iterations},
                                                    {"warmup", o.warmup},
                                                    {"flags", cudnn::config().str()},
                                                    {"groupnorm", rows},
                                                    {"rmsnorm", rms_rows}};
  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    f << results.dump() << "\n";
    if (!f) {
      std::fprintf(stderr, "norm_benchmark: cannot write %s\n", o.json_path.c_str());
      return 2;
    }
  }
  return 0;
}
