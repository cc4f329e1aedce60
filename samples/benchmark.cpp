// convnet_benchmark (samples/benchmark.cpp): times forward and forward+backward of the convnet-benchmarks layers
// (L1-L5) and whole networks (AlexNet, VGG-11, ResNet-50) on either backend; prints a table and writes JSON. Each timed
// iteration ends with a device synchronisation; the median is reported.
// --step adds the whole training step (loss, backward, optimizer update); --eval the forward in
// evaluation mode, the fair comparison for an inference user (PyTorch's eval() under no_grad). Device memory comes
// from the caching allocator, which starts each row empty: the peak over the timed iterations
// alone ("steady") and over the whole row (algorithm searches included, "peak"), each as bytes
// allocated (in tensors and workspaces) and reserved (held from the driver, cached blocks
// included), as PyTorch's max_memory_allocated / max_memory_reserved. The first module computes no
// gradInput (the input needs none) unless --input-grad. scripts/bench_torch.py times the same
// networks the same way in PyTorch, for ratios.
//
//   convnet_benchmark [--backend nn|cudnn] [--nets L1,L2,...|all] [--batch N] [--iterations N]
//             [--warmup N] [--dtype float32|float16|bfloat16] [--flags k=v,...] [--json PATH] [--per-layer]
//             [--data-parallel]
// --data-parallel (a build with NCCL; under scripts/launch -n N for N GPUs): training steps
// (forward, backward, SGD step) of the first network per GPU alone, then wrapped in
// dist::DistributedDataParallel; images/s over all GPUs and the scaling efficiency
// (run_data_parallel below; scripts/bench_torch.py --data-parallel is its PyTorch DDP twin).
//             [--step [--graph]] [--eval] [--input-grad] [--channels-last | --autotune]
//             [--amp float16|bfloat16] [--peak-tflops X] [--peak-gbps X]
// --amp (cudnn, with --step): the network computes in float16 / bfloat16 (batch norm keeps
// float32) and the step is mixed-precision training as a PyTorch user's autocast + GradScaler
// step: float32 master weights (nn::MasterWeights) updated by SGD, float16 loss scaling
// (nn::GradScaler: fused unscale and Inf/NaN check, the step skipped on overflow); the forward
// and fwd+bwd rows run in that dtype. With --graph the whole amp step is captured and replayed:
// on CUDA gradients the scaler's state and skip decision stay on the device (Note [Capturable
// loss scaling] in nn/GradScaler.h); without --graph it is timed eagerly.
// --channels-last (cudnn): the input is made channels-last (NHWC / NDHWC) once, before any
// timing, and the twins keep that layout throughout (Note [Channels-last twins] in
// cudnn/core/Layout.h); a 4-d / 5-d gradOutput is made in the output's layout. The network's
// filters are laid out channels-last too (Module::to(MemoryFormat)), as PyTorch's side does.
// --autotune (cudnn): cudnn::autotune on the row-major input instead, which fuses and keeps
// channels-last where its own timed pass finds it faster (cudnn/Autotune.h).
// Roofline: every row also prints, per pass (forward, fwd+bwd, step), its counted FLOPs and
// minimum bytes (samples::count_work on the network benchmarked, Note [Counted work] in
// samples/CountedWork.cpp) as achieved TFLOP/s and GB/s, and on a GPU their share of the
// machine's peaks (Note [Roofline peaks] below): --peak-tflops (default 790 for float16 and
// bfloat16, an H200's measured dense 16-bit rate; float32 495 with TF32 math, cudnn's default,
// 67 with allow_tf32=false) and --peak-gbps (default 4300, an H200's measured copy bandwidth).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "convert/Convert.h"
#include "nn/Adam.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/GradScaler.h"
#include "nn/MSECriterion.h"
#include "nn/MixedPrecision.h"
#include "nn/RNNBase.h"
#include "nn/SGD.h"
#include "samples/Args.h"
#include "samples/CountedWork.h"
#include "samples/Networks.h"
#include "tensor/Blas.h"
#include "tensor/Cuda.h"
#include "tensor/FileIO.h"
#include "tensor/Json.h"

#ifdef CUDNN_NN_HAVE_CUDA
#include "cudnn/Autotune.h"
#include "cudnn/Fuse.h"
#include "cudnn/core/Config.h"
#endif
#ifdef CUDNN_NN_HAVE_NCCL
#include "distributed/Dist.h"
#include "distributed/DistributedDataParallel.h"
#include "nn/SGD.h"
#endif

using tensor::Device;
using tensor::DType;
using tensor::Tensor;

namespace {

struct Options {
  std::string backend;  // empty: cudnn where a GPU is visible, else nn
  std::vector<std::string> nets = samples::benchmark_names();
  int64_t batch = 0;  // 0: each benchmark's own
  int64_t iterations = 20;
  int64_t warmup = 5;
  std::string dtype = "float32";
  std::string flags;
  std::string json;
  bool per_layer = false;
  bool data_parallel = false;
  bool step = false;              // also time forward + loss + backward + optimizer update
  bool input_grad = false;        // compute the first module's gradInput (Torch's backward always did)
  bool fuse = false;              // cudnn::fuse the network (convolution + bias [+ activation] as one operation)
  bool keep_grad_inputs = false;  // keep every module's gradInput after backward (Torch's default)
  bool channels_last = false;     // cudnn: run on a channels-last input
  bool graph = false;             // cudnn: the step captured once as a CUDA graph, then replayed
  std::string amp;                // cudnn, --step: float16 or bfloat16 mixed-precision training step
  bool rnn_persist = false;       // cudnn: recurrent modules ask for cuDNN's persistent kernels
  bool eval = false;              // also time the forward in evaluation mode (an inference user's)
  bool autotune = false;          // cudnn::autotune: fusion, and the layout chosen by timing it
  double peak_tflops = 0;         // 0: the dtype's default on a GPU (Note [Roofline peaks]), none on the CPU
  double peak_gbps = 0;           // 0: 4300 on a GPU, none on the CPU
};

const char* kOptions =
    "  --batch N         override every benchmark's batch size\n"
    "  --iterations N    timed iterations per measurement (default 20; the median is reported)\n"
    "  --warmup N        untimed iterations first (default 5)\n"
    "  --dtype T         float32 (default), float16 or bfloat16 (cudnn only)\n"
    "  --flags F         cudnn flags, as CUDNN_NN_FLAGS (e.g. benchmark=true,allow_tf32=false)\n"
    "  --json PATH       also write the results as JSON\n"
    "  --per-layer       also time each top-level module alone (forward, forward+backward)\n"
    "  --data-parallel   training steps of the first network, alone and with DistributedDataParallel,\n"
    "                    per GPU (run under scripts/launch -n N; default network resnet50)\n"
    "  --step            also time a whole training step: forward, cross-entropy loss, backward and\n"
    "                    the optimizer update (SGD with momentum 0.9; Adam for fashion), for networks\n"
    "                    that end in [batch x classes] scores; lstm: MSE of its sequence output\n"
    "                    against zeros\n"
    "  --graph           (cudnn, with --step) capture the step once as a CUDA graph and time its replays\n"
    "                    (tensor::cuda::Graph); the captured step computes the criterion's gradient but\n"
    "                    reads no loss, which a capture cannot do\n"
    "  --amp T           (cudnn, with --step) float16 or bfloat16 compute, and a mixed-precision step:\n"
    "                    float32 master weights, SGD, loss scaling (GradScaler) for float16; with\n"
    "                    --graph the whole amp step is captured (the skip decided on the device)\n"
    "  --eval            also time the forward with the network in evaluation mode (batch norm on\n"
    "                    its running statistics, dropout off), as an inference user runs it\n"
    "  --input-grad      compute the first module's gradInput too (default: not, as the input needs\n"
    "                    no gradient; see nn::Module::setGradInputNeeded)\n"
    "  --keep-grad-inputs  keep every module's gradInput after backward, as Torch does (default: free\n"
    "                    them once used, as PyTorch does; nn::Module::setFreeIntermediateGradients)\n"
    "  --fuse            cudnn::fuse the network: each convolution + activation pair, and each\n"
    "                    other convolution + bias where faster, as one cuDNN graph operation\n"
    "                    (cudnn/Fuse.h)\n"
    "  --channels-last   (cudnn) make the 4-d / 5-d input channels-last (NHWC) once, before timing:\n"
    "                    the cudnn layers then compute and keep that layout; the filters are laid\n"
    "                    out channels-last too (nn::Module::to(MemoryFormat::ChannelsLast))\n"
    "  --autotune        (cudnn) cudnn::autotune the network on the benchmark's input before timing:\n"
    "                    cudnn::fuse, then channels-last where a timed pass finds it faster (the\n"
    "                    network wrapped so that it takes and gives row-major tensors); the choice\n"
    "                    and both times are printed (cudnn/Autotune.h). Replaces --fuse and --channels-last\n"
    "  --rnn-persist     (cudnn) recurrent modules run cuDNN's persistent kernels where cuDNN takes the\n"
    "                    shape (nn::RNNBase::setPersist; the lstm row)\n"
    "  --peak-tflops X   the roofline's compute peak (default on a GPU: 790 for float16 and bfloat16,\n"
    "                    an H200's measured dense rate; float32 495 with TF32 math, the default, 67\n"
    "                    with --flags allow_tf32=false; the CPU has none unless given)\n"
    "  --peak-gbps X     the roofline's memory peak (default on a GPU: 4300, an H200's measured copy\n"
    "                    bandwidth; the CPU has none unless given). Each row prints its counted\n"
    "                    FLOPs and minimum bytes (samples/CountedWork.h) as TFLOP/s and GB/s\n";

std::string usage() {
  std::string nets;
  for (const auto& n : samples::benchmark_names()) nets += (nets.empty() ? "" : ",") + n;
  return "usage: convnet_benchmark [options]\n"
         "  --backend B       cudnn (converts and runs on the GPU; the default where one is visible)\n"
         "                    or nn (CPU; the default without a GPU)\n"
         "  --nets LIST       comma-separated: " +
         nets + " or all (default)\n" + kOptions;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  samples::Args args(argc, argv, usage());
  auto nets = [&o](samples::Args& a, const std::string& flag) {
    const std::string v = a.value(flag);
    o.nets = v == "all" ? samples::benchmark_names() : split(v);
    const auto known = samples::benchmark_names();
    for (const auto& n : o.nets) {
      if (std::find(known.begin(), known.end(), n) == known.end()) a.fail("unknown network '" + n + "'");
    }
  };
  auto json = [&o](samples::Args& a, const std::string& flag) { a.writable(flag, o.json = a.value(flag)); };
  samples::Flags()
      .choice("--backend", o.backend, {"nn", "cudnn"})
      .on("--nets", nets)
      .integer("--batch", o.batch, 1, 4096)
      .integer("--iterations", o.iterations, 1, 100000)
      .integer("--warmup", o.warmup, 0, 100000)
      .choice("--dtype", o.dtype, {"float32", "float16", "bfloat16"})
      .text("--flags", o.flags)
      .on("--json", json)
      .set("--per-layer", o.per_layer)
      .set("--data-parallel", o.data_parallel)
      .set("--step", o.step)
      .set("--eval", o.eval)
      .set("--graph", o.graph)
      .set("--input-grad", o.input_grad)
      .set("--fuse", o.fuse)
      .set("--keep-grad-inputs", o.keep_grad_inputs)
      .set("--channels-last", o.channels_last)
      .set("--rnn-persist", o.rnn_persist)
      .set("--autotune", o.autotune)
      .choice("--amp", o.amp, {"float16", "bfloat16"})
      .number("--peak-tflops", o.peak_tflops, 0.001, 1e6)
      .number("--peak-gbps", o.peak_gbps, 0.001, 1e6)
      .parse(args);
  // No --backend: cudnn where a GPU is visible, else nn (said, and a cudnn-only flag is refused
  // naming the missing GPU rather than a --backend the user never passed).
  const bool gpu = tensor::cuda::is_available(), picked = o.backend.empty();
  if (picked) o.backend = gpu || o.data_parallel ? "cudnn" : "nn";
  if (!picked && o.backend == "cudnn" && !gpu && !o.data_parallel) {
    args.fail("--backend cudnn needs a CUDA device, and none is visible (--backend nn times the CPU)");
  }
  const std::string needs =
      picked ? " needs a GPU (the cudnn backend), and no CUDA device is visible" : " needs --backend cudnn";
  if (o.backend == "nn" && o.dtype != "float32") args.fail("--dtype " + o.dtype + needs);
  if (o.backend == "nn" && o.fuse) args.fail("--fuse" + needs);
  if (o.backend == "nn" && o.channels_last) args.fail("--channels-last" + needs);
  if (o.backend == "nn" && o.rnn_persist) args.fail("--rnn-persist" + needs);
  if (o.backend == "nn" && o.graph) args.fail("--graph" + needs);
  if (o.backend == "nn" && o.autotune) args.fail("--autotune" + needs);
  if (o.autotune && (o.fuse || o.channels_last)) {
    args.fail("--autotune fuses and picks the layout itself: leave --fuse and --channels-last out");
  }
  if (o.graph && !o.step) args.fail("--graph needs --step");
  if (!o.amp.empty() && o.backend == "nn") args.fail("--amp" + needs);
  if (!o.amp.empty() && !o.step) args.fail("--amp needs --step (it times the mixed-precision training step)");
  if (!o.amp.empty() && o.dtype != "float32") args.fail("--amp sets the compute dtype: leave --dtype out");
  if (picked && o.backend == "nn") {
    std::printf("no CUDA device visible: timing the nn backend on the CPU (--backend nn)\n");
  }
  return o;
}

// The benchmark's input in the layout asked for (one conversion, before any timing).
Tensor in_layout(const Tensor& x, const Options& o) {
  return o.channels_last ? x.contiguous(tensor::MemoryFormat::ChannelsLast) : x;
}

// A random gradOutput in the output's layout (channels-last outputs get channels-last ones).
Tensor grad_like(const Tensor& y, tensor::Generator& gen, DType dtype, Device device) {
  return tensor::uniform(y.sizes(), -1, 1, gen, dtype, device).contiguous(tensor::suggest_memory_format(y));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Result {
  std::string name;
  tensor::Shape input;
  int64_t batch = 0;  // samples per step (images, or sequences for lstm)
  double forward_ms = 0, train_ms = 0;
  double step_ms = 0;          // with --step, for networks with [batch x classes] output and lstm; else 0
  double eval_forward_ms = 0;  // with --eval: the forward in evaluation mode; else 0
  // the caching allocator's peaks, allocated and reserved: over the row (algorithm searches
  // included), and over the timed iterations alone (after the warm-up)
  size_t peak_bytes = 0, peak_reserved = 0;
  size_t steady_bytes = 0, steady_reserved = 0;
  struct Layer {
    std::string module;
    double forward_ms, train_ms;
  };
  std::vector<Layer> layers;  // with --per-layer, for a network with children
  std::string autotune;       // with --autotune: what it did (AutotuneReport::str)
  // the work the passes must do (samples::count_work), unless counting failed (`uncountable` says why)
  bool counted = false;
  samples::CountedWork work;
  samples::Work step_work;  // with step_ms
  std::string uncountable;
};

// forward, cross-entropy loss, backward, optimizer update: the whole training step, as a
// training loop runs it (the loss is read back, as a loop that prints it does). With `graph`
// the step without the loss read (the criterion's gradient needs no loss value) is captured
// once after a warm-up and its replays are timed; the loss is read once at the end.
// --amp: the mixed-precision step (the network already in x's 16-bit dtype): scores to
// float32 for the loss (as autocast computes losses), the scaled gradient back in 16 bits,
// the gradients to the float32 master weights, unscaled and checked, SGD on the masters
// unless a gradient overflowed, the 16-bit weights refreshed (Note [Master weights] in
// nn/MixedPrecision.h). The scaler's state and skip decision live on the device (Note
// [Capturable loss scaling] in nn/GradScaler.h), so with `graph` the step without the loss read
// is captured after the warm-up and its replays are timed, as time_step's.
template <class TimeMs>
double time_amp_step(nn::Module& net, const Tensor& x, const Tensor& target, const nn::CriterionPtr& criterion,
                     bool graph, int64_t warmup, TimeMs&& time_ms) {
  nn::MasterWeights master(net);
  nn::SGD optimizer(master.params(), master.grads(), nn::SGD::Options{.lr = 1e-3, .momentum = 0.9});
  nn::GradScaler scaler({.enabled = x.dtype() == DType::Float16});
  double loss = 0;
  auto step = [&](bool readLoss) {
    net.zeroGradParameters();
    const Tensor scores = net.forward(x).to(DType::Float32);
    if (readLoss) loss += criterion->forward(scores, target);
    net.backward(x, scaler.scaleGrad(criterion->backward(scores, target)).to(x.dtype()));
    master.gradsToMaster();
    if (scaler.step(optimizer)) master.paramsToModel();
    scaler.update();
  };
  double ms = 0;
  if (graph) {
    for (int64_t i = 0; i < std::max<int64_t>(warmup, 1); ++i) step(false);  // searches, buffers, momentum
    const tensor::cuda::Graph captured = tensor::cuda::Graph::capture([&] { step(false); }, x.device().index);
    ms = time_ms([&] { captured.replay(); });
    loss = criterion->forward(net.forward(x).to(DType::Float32), target);
  } else {
    ms = time_ms([&] { step(true); });
  }
  if (!std::isfinite(loss)) std::fprintf(stderr, "convnet_benchmark: the amp step's loss is %g\n", loss);
  if (scaler.skippedSteps() > 0) {
    std::fprintf(stderr, "convnet_benchmark: the amp step skipped %lld steps (loss scale now %g)\n",
                 static_cast<long long>(scaler.skippedSteps()), scaler.scale());
  }
  return ms;
}

// The step's loss, the same in scripts/bench_torch.py: [batch x classes] scores y against fixed
// labels by cross-entropy; a sequence output (the lstm row's [T x batch x hidden]) against zeros by
// MSE, the target in float32 for the amp step (its loss is computed in float32).
std::pair<nn::CriterionPtr, Tensor> step_loss(const Tensor& y, bool amp) {
  nn::CriterionPtr criterion;
  Tensor target;
  if (y.dim() == 2) {
    std::vector<int64_t> labels(static_cast<size_t>(y.size(0)));
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 7) % y.size(1));
    criterion = std::make_shared<nn::CrossEntropyCriterion>();
    target = tensor::from_vector(labels).to(y.device());
  } else {
    criterion = std::make_shared<nn::MSECriterion>();
    target = tensor::zeros(y.sizes(), amp ? DType::Float32 : y.dtype(), y.device());
  }
  if (y.is_cuda()) criterion = nn::convert(criterion, cudnn::backend);
  return {criterion, target};
}

// y: the network's output, which picks the loss (step_loss).
template <class TimeMs>
double time_step(nn::Module& net, const Tensor& x, const Tensor& y, bool adam, bool graph, bool amp, int64_t warmup,
                 TimeMs&& time_ms) {
  const std::pair<nn::CriterionPtr, Tensor> loss_of = step_loss(y, amp);
  const nn::CriterionPtr& criterion = loss_of.first;
  const Tensor& target = loss_of.second;
  if (amp) return time_amp_step(net, x, target, criterion, graph, warmup, time_ms);
  std::unique_ptr<nn::Optimizer> optimizer;
  if (adam)
    optimizer = std::make_unique<nn::Adam>(net, 2e-3);
  else
    optimizer = std::make_unique<nn::SGD>(net, 1e-3, 0.9);
  double loss = 0;
  if (graph && adam) {
    std::fprintf(stderr, "convnet_benchmark: --graph: Adam cannot be captured (nn::Adam::step); eager step\n");
    graph = false;
  }
  if (graph) {
    auto step = [&] {
      optimizer->zeroGrad();
      const Tensor& scores = net.forward(x);
      net.backward(x, criterion->updateGradInput(scores, target));
      optimizer->step();
    };
    for (int64_t i = 0; i < std::max<int64_t>(warmup, 1); ++i) step();  // searches, buffers, optimizer state
    tensor::cuda::Graph captured;
    try {
      captured = tensor::cuda::Graph::capture(step, x.device().index);
    } catch (const tensor::Error& e) {  // a network whose step cannot be captured: its eager step
      std::fprintf(stderr, "convnet_benchmark: --graph: the step was not captured (%s); eager step\n", e.what());
    }
    if (captured.defined()) {
      const double ms = time_ms([&] { captured.replay(); });
      loss = criterion->forward(net.forward(x), target);
      if (!std::isfinite(loss)) std::fprintf(stderr, "convnet_benchmark: the step's loss is %g\n", loss);
      return ms;
    }
  }
  const double ms = time_ms([&] {
    optimizer->zeroGrad();
    const Tensor& scores = net.forward(x);
    loss += criterion->forward(scores, target);
    net.backward(x, criterion->backward(scores, target));
    optimizer->step();
  });
  if (!std::isfinite(loss)) std::fprintf(stderr, "convnet_benchmark: the step's loss is %g\n", loss);
  return ms;
}

// Each top-level module on the input it sees inside the network, timed alone the same way
// (a synchronisation per iteration, so the parts add up to more than the whole).
template <class TimeMs>
std::vector<Result::Layer> time_layers(nn::Module& net, const Tensor& x, tensor::Generator& gen, DType dtype,
                                       Device device, TimeMs&& time_ms) {
  std::vector<Result::Layer> layers;
  Tensor in = x;
  for (const nn::ModulePtr& m : *net.children()) {
    const Tensor out = m->forward(in);
    const Tensor gm = grad_like(out, gen, dtype, device);
    const double f = time_ms([&] { m->forward(in); });
    const double t = time_ms([&] {
      m->zeroGradParameters();
      m->forward(in);
      m->backward(in, gm);
    });
    layers.push_back({m->str().substr(0, m->str().find('\n')), f, t});
    in = m->forward(in);
  }
  return layers;
}

Result run_one(const std::string& name, const Options& o, Device device, DType dtype) {
  if (device.is_cuda()) {  // each row from an empty cache, as bench_torch.py's torch.cuda.empty_cache()
    tensor::cuda::empty_cache();
    tensor::cuda::reset_peak_memory_stats();
  }
  samples::Benchmark b = samples::make_benchmark(name);
  if (o.batch) b.input[b.batchDim] = o.batch;
  std::shared_ptr<nn::Module> net = b.net;
  if (o.rnn_persist) {
    net->apply([](nn::Module& m) {
      if (auto* rnn = dynamic_cast<nn::RNNBase*>(&m)) rnn->setPersist(true);
    });
  }
  if (device.is_cuda()) net = nn::convert(net, cudnn::backend);
#ifdef CUDNN_NN_HAVE_CUDA
  if (device.is_cuda() && o.fuse) cudnn::fuse(*net);
#endif
  net->to(dtype);
  // the filters too, as PyTorch's model.to(memory_format=torch.channels_last): no per-pass copy
  if (o.channels_last) net->to(tensor::MemoryFormat::ChannelsLast);
  net->train();
  net->setGradInputNeeded(o.input_grad);
  net->setFreeIntermediateGradients(!o.keep_grad_inputs);
  tensor::Generator gen(1);
  const Tensor x = in_layout(tensor::uniform(b.input, -1, 1, gen, dtype, device), o);
  std::string tuned;
#ifdef CUDNN_NN_HAVE_CUDA
  if (o.autotune) {
    cudnn::AutotuneReport report;
    net = cudnn::autotune(net, x, {}, &report);
    tuned = report.str();
    std::printf("autotune %s: %s\n", name.c_str(), tuned.c_str());
  }
#endif
  const Tensor y = net->forward(x);
  const Tensor g = grad_like(y, gen, dtype, device);
  Result r;
  try {  // from the shapes this forward left in every module
    r.work = samples::count_work(*net, x.sizes(), dtype, o.input_grad);
    r.counted = true;
  } catch (const tensor::Error& e) {
    r.uncountable = e.what();
  }
  auto sync = [&] {
    if (device.is_cuda()) tensor::cuda::synchronize();
  };
  Result mem;  // the memory peaks so far
  auto time_ms = [&](auto&& step) {
    for (int64_t i = 0; i < o.warmup; ++i) step();
    sync();
    const tensor::cuda::MemoryStats warm =
        device.is_cuda() ? tensor::cuda::memory_stats() : tensor::cuda::MemoryStats{};
    if (device.is_cuda()) tensor::cuda::reset_peak_memory_stats();
    std::vector<double> ms;
    for (int64_t i = 0; i < o.iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      sync();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (device.is_cuda()) {
      const tensor::cuda::MemoryStats timed = tensor::cuda::memory_stats();
      mem.steady_bytes = std::max(mem.steady_bytes, timed.peak_allocated_bytes);
      mem.steady_reserved = std::max(mem.steady_reserved, timed.peak_reserved_bytes);
      // the row's peak keeps what came before the reset
      mem.peak_bytes = std::max({mem.peak_bytes, warm.peak_allocated_bytes, timed.peak_allocated_bytes});
      mem.peak_reserved = std::max({mem.peak_reserved, warm.peak_reserved_bytes, timed.peak_reserved_bytes});
    }
    return median(ms);
  };
  r.name = name;
  r.autotune = tuned;
  r.input = b.input;
  r.batch = b.input[b.batchDim];
  r.forward_ms = time_ms([&] { net->forward(x); });
  if (o.eval) {
    net->evaluate();
    r.eval_forward_ms = time_ms([&] { net->forward(x); });
    net->train();
  }
  r.train_ms = time_ms([&] {
    net->zeroGradParameters();
    net->forward(x);
    net->backward(x, g);
  });
  if (o.step && (y.dim() == 2 || name == "lstm")) {
    r.step_ms =
        time_step(*net, x, y, name == "fashion", o.graph && device.is_cuda(), !o.amp.empty(), o.warmup, time_ms);
    // the optimizer's states: Adam's two moments (fashion), SGD's momentum; --amp: float32
    // masters and loss (time_amp_step)
    const size_t master = o.amp.empty() ? tensor::itemsize(dtype) : tensor::itemsize(DType::Float32);
    r.step_work = r.work.step(name == "fashion" ? 2 : 1, master, master);
  }
  r.peak_bytes = mem.peak_bytes;
  r.peak_reserved = mem.peak_reserved;
  r.steady_bytes = mem.steady_bytes;
  r.steady_reserved = mem.steady_reserved;
  if (o.per_layer && net->children()) r.layers = time_layers(*net, x, gen, dtype, device, time_ms);
  return r;
}

#ifdef CUDNN_NN_HAVE_NCCL
// Data-parallel mode: each process (rank) drives its GPU. Phase 1 times a training step of the
// network alone on every GPU at once (the single-GPU baseline); phase 2 the same step through
// DistributedDataParallel. A step's time is the slowest rank's median; the scaling efficiency
// is the data-parallel images/s over (world size x the baseline's).
int run_data_parallel(const Options& o, const std::string& name) {
  auto group = dist::init();
  const int world = group->worldSize();
  const Device device = group->device();
  if (!o.flags.empty()) cudnn::set_flags(o.flags);
  const DType dtype = tensor::dtype_from_name(o.dtype);
  samples::Benchmark b = samples::make_benchmark(name);
  if (o.batch) b.input[b.batchDim] = o.batch;
  const int64_t batch = b.input[b.batchDim];
  std::shared_ptr<nn::Module> net = nn::convert(b.net, cudnn::backend);
  net->to(device);
  net->to(dtype);
  net->train();
  tensor::Generator gen(1 + static_cast<uint64_t>(group->rank()));
  const Tensor x = in_layout(tensor::uniform(b.input, -1, 1, gen, dtype, device), o);
  const Tensor g = grad_like(net->forward(x), gen, dtype, device);
  auto step_ms = [&](nn::Module& model) {
    nn::SGD sgd(model, 0.01, 0.9);
    auto step = [&] {
      sgd.zeroGrad();
      model.forward(x);
      model.backward(x, g);
      sgd.step();
    };
    for (int64_t i = 0; i < o.warmup; ++i) step();
    tensor::cuda::synchronize();
    std::vector<double> ms;
    for (int64_t i = 0; i < o.iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      tensor::cuda::synchronize();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    Tensor slowest = tensor::full({1}, median(ms), DType::Float64, device);
    dist::all_reduce(slowest, dist::ReduceOp::Max);
    return slowest.item();
  };
  const double alone = step_ms(*net);
  dist::barrier();
  auto ddp = std::make_shared<dist::DistributedDataParallel>(net);
  const double parallel = step_ms(*ddp);
  const double ips_alone = batch / (alone / 1000), ips = world * batch / (parallel / 1000);
  const double efficiency = ips / (world * ips_alone);
  if (group->rank() == 0) {
    std::printf(
        "data parallel %s, %s, %d GPU%s, batch %lld per GPU: alone %.3f ms/step (%.0f img/s per GPU), "
        "DDP %.3f ms/step, %.0f img/s in all, scaling efficiency %.3f\n",
        name.c_str(), o.dtype.c_str(), world, world == 1 ? "" : "s", static_cast<long long>(batch), alone, ips_alone,
        parallel, ips, efficiency);
    if (!o.json.empty()) {
      const tensor::Json doc = tensor::Json::Object{
          {"mode", "data_parallel"}, {"network", name},          {"dtype", o.dtype},
          {"world_size", world},     {"batch_per_gpu", batch},   {"alone_step_ms", alone},
          {"ddp_step_ms", parallel}, {"images_per_second", ips}, {"scaling_efficiency", efficiency}};
      const std::string text = doc.dump(2) + "\n";
      tensor::write_file_atomic(o.json, text.data(), text.size(), "convnet_benchmark --json");
    }
  }
  return 0;
}
#endif

// Note [Roofline peaks]
// A row's counted work over its time, against what the machine can do at best: the dense
// tensor-core rate of the run's dtype and the copy bandwidth, as measured on an H200 (the lead's
// machine; the data-sheet figures are 989 TFLOP/s and 4.8 TB/s): bfloat16 and float16 790
// TFLOP/s; float32 runs cuDNN's convolutions and cuBLAS's products on TF32 tensor cores unless
// --flags allow_tf32=false (cudnn::Config::allow_tf32, true by default as in PyTorch), so its
// peak is TF32's dense 495 TFLOP/s, and the FP32 FMA rate, 67, where TF32 is off; memory 4300
// GB/s. --peak-tflops and --peak-gbps replace them (another GPU, or the CPU, which has no
// default: its rows print the rates alone).
struct Peaks {
  double tflops = 0, gbps = 0;  // 0: none (the rates printed alone)
  std::string math;             // the dtype and, for float32 on a GPU, whether TF32 ("float32, TF32")
};

Peaks roofline_peaks(const Options& o, DType dtype, Device device) {
  Peaks p{o.peak_tflops, o.peak_gbps, tensor::name(dtype)};
  if (!device.is_cuda()) return p;
  bool tf32 = true;
#ifdef CUDNN_NN_HAVE_CUDA
  tf32 = cudnn::config().allow_tf32;
#endif
  if (dtype == DType::Float32) p.math += tf32 ? ", TF32" : ", FP32 (allow_tf32=false)";
  if (p.gbps == 0) p.gbps = 4300;
  if (p.tflops == 0) p.tflops = dtype == DType::Float32 ? (tf32 ? 495 : 67) : 790;
  return p;
}

// "12.3 TFLOP/s (1.6% of 790)": a rate, and its share of the peak where there is one.
std::string rate(double value, double peak, const char* unit) {
  char s[96];
  if (peak > 0) {
    std::snprintf(s, sizeof s, "%.3g %s (%.1f%% of %g)", value, unit, 100 * value / peak, peak);
  } else {
    std::snprintf(s, sizeof s, "%.3g %s", value, unit);
  }
  return s;
}

// One pass's roofline line: the counted work, and what it makes of `ms`.
void print_roofline(const char* pass, const samples::Work& w, double ms, const Peaks& p) {
  std::printf("  roofline %-8s %9.3f GFLOP %9.4f GB: %s, %s\n", pass, w.flops / 1e9, w.bytes / 1e9,
              rate(w.tflops(ms), p.tflops, "TFLOP/s").c_str(), rate(w.gbps(ms), p.gbps, "GB/s").c_str());
}

// A row of the table (the memory columns on a GPU only), its roofline lines, and its modules'
// rows with --per-layer (their TFLOP/s and GB/s forward and forward+backward after the times).
void print_row(const Result& r, Device device, const Peaks& peaks) {
  char step[16] = "-", steady[32] = "-", peak[32] = "-";
  if (r.step_ms > 0) std::snprintf(step, sizeof step, "%.3f", r.step_ms);
  if (device.is_cuda()) {
    std::snprintf(steady, sizeof steady, "%.0f/%.0f", r.steady_bytes / 1048576.0, r.steady_reserved / 1048576.0);
    std::snprintf(peak, sizeof peak, "%.0f/%.0f", r.peak_bytes / 1048576.0, r.peak_reserved / 1048576.0);
  }
  std::printf("%-9s %-22s %12.3f %14.3f %12.0f %10s %13s %13s\n", r.name.c_str(), tensor::shape_str(r.input).c_str(),
              r.forward_ms, r.train_ms, r.batch / (r.train_ms / 1000), step, steady, peak);
  if (r.eval_forward_ms > 0) std::printf("  forward in evaluation mode (--eval): %.3f ms\n", r.eval_forward_ms);
  if (r.counted) {
    print_roofline("forward", r.work.forward, r.forward_ms, peaks);
    if (r.eval_forward_ms > 0) print_roofline("eval", r.work.forward, r.eval_forward_ms, peaks);
    print_roofline("fwd+bwd", r.work.forwardBackward(), r.train_ms, peaks);
    if (r.step_ms > 0) print_roofline("step", r.step_work, r.step_ms, peaks);
    if (!r.work.uncounted.empty()) {
      std::string names;
      for (const auto& t : r.work.uncounted) names += (names.empty() ? "" : ", ") + t;
      std::printf("  (counted as no work: %s)\n", names.c_str());
    }
  } else {
    std::printf("  roofline: not counted (%s)\n", r.uncountable.c_str());
  }
  const bool layerWork = r.counted && r.work.layers.size() == r.layers.size();
  for (size_t i = 0; i < r.layers.size(); ++i) {
    char index[24], work[96] = "";
    std::snprintf(index, sizeof index, "(%zu)", i + 1);
    if (layerWork) {
      const samples::CountedWork& w = r.work.layers[i];
      std::snprintf(work, sizeof work, "  %8.3g %8.3g TFLOP/s %8.3g %8.3g GB/s",
                    w.forward.tflops(r.layers[i].forward_ms), w.forwardBackward().tflops(r.layers[i].train_ms),
                    w.forward.gbps(r.layers[i].forward_ms), w.forwardBackward().gbps(r.layers[i].train_ms));
    }
    std::printf("  %-5s %-44s %10.3f %14.3f%s\n", index, r.layers[i].module.substr(0, 44).c_str(),
                r.layers[i].forward_ms, r.layers[i].train_ms, work);
  }
  std::fflush(stdout);
}

// The counted work of a pass and its rates, as "<pass>_flops", "_bytes", "_tflops", "_gbps".
void set_work(tensor::Json& j, const std::string& pass, const samples::Work& w, double ms) {
  j.set(pass + "_flops", w.flops);
  j.set(pass + "_bytes", w.bytes);
  j.set(pass + "_tflops", w.tflops(ms));
  j.set(pass + "_gbps", w.gbps(ms));
}

// A row of the --json results.
tensor::Json row_json(const Result& r) {
  tensor::Json::Array shape(r.input.begin(), r.input.end());
  tensor::Json j = tensor::Json::Object{
      {"network", r.name}, {"input", shape}, {"forward_ms", r.forward_ms}, {"forward_backward_ms", r.train_ms}};
  if (r.step_ms > 0) j.set("step_ms", r.step_ms);
  if (!r.autotune.empty()) j.set("autotune", r.autotune);
  if (r.eval_forward_ms > 0) j.set("eval_forward_ms", r.eval_forward_ms);
  j.set("peak_device_bytes", static_cast<int64_t>(r.peak_bytes));
  j.set("steady_device_bytes", static_cast<int64_t>(r.steady_bytes));
  j.set("peak_reserved_bytes", static_cast<int64_t>(r.peak_reserved));
  j.set("steady_reserved_bytes", static_cast<int64_t>(r.steady_reserved));
  if (r.counted) {  // Note [Counted work] in samples/CountedWork.cpp
    set_work(j, "forward", r.work.forward, r.forward_ms);
    set_work(j, "forward_backward", r.work.forwardBackward(), r.train_ms);
    if (r.eval_forward_ms > 0) set_work(j, "eval_forward", r.work.forward, r.eval_forward_ms);
    if (r.step_ms > 0) set_work(j, "step", r.step_work, r.step_ms);
    tensor::Json::Array uncounted(r.work.uncounted.begin(), r.work.uncounted.end());
    j.set("uncounted_modules", uncounted);
  }
  const bool layerWork = r.counted && r.work.layers.size() == r.layers.size();
  if (!r.layers.empty()) {
    tensor::Json::Array layers;
    for (size_t i = 0; i < r.layers.size(); ++i) {
      const auto& l = r.layers[i];
      tensor::Json layer =
          tensor::Json::Object{{"module", l.module}, {"forward_ms", l.forward_ms}, {"forward_backward_ms", l.train_ms}};
      if (layerWork) {
        set_work(layer, "forward", r.work.layers[i].forward, l.forward_ms);
        set_work(layer, "forward_backward", r.work.layers[i].forwardBackward(), l.train_ms);
      }
      layers.push_back(layer);
    }
    j.set("layers", layers);
  }
  return j;
}

int run(const Options& o) {
  if (o.data_parallel) {
#ifdef CUDNN_NN_HAVE_NCCL
    const bool defaults = o.nets == samples::benchmark_names();
    return run_data_parallel(o, defaults ? std::string("resnet50") : o.nets.front());
#else
    throw std::runtime_error("--data-parallel needs a build with NCCL");
#endif
  }
  Device device = Device::cpu();
  if (o.backend == "cudnn") {
    if (!tensor::cuda::is_available())
      throw std::runtime_error("--backend cudnn needs a CUDA device, and none is visible");
    device = Device::cuda(0);
#ifdef CUDNN_NN_HAVE_CUDA
    if (!o.flags.empty()) cudnn::set_flags(o.flags);
    std::printf("cudnn flags: %s%s\n", cudnn::config().str().c_str(), o.channels_last ? " (input channels-last)" : "");
#endif
  } else {
    std::printf("CPU products: %s, %s\n", tensor::blas::backend().c_str(), tensor::blas::kernels().c_str());
  }
  const DType dtype = tensor::dtype_from_name(o.amp.empty() ? o.dtype : o.amp);
  if (!o.amp.empty()) {
    std::printf("--amp %s: %s compute; step ms: mixed precision, float32 master weights, SGD%s, %s\n", o.amp.c_str(),
                o.amp.c_str(), o.amp == "float16" ? ", GradScaler" : "", o.graph ? "CUDA graph" : "eager");
  }
  const Peaks peaks = roofline_peaks(o, dtype, device);
  if (peaks.tflops > 0 || peaks.gbps > 0) {
    std::printf("roofline peaks: %g TFLOP/s (%s), %g GB/s%s\n", peaks.tflops, peaks.math.c_str(), peaks.gbps,
                o.peak_tflops > 0 || o.peak_gbps > 0 ? " (given)" : " (an H200's, measured)");
  }
  // memory: MiB allocated / reserved, over the timed iterations ("steady") and the whole row ("peak")
  std::printf("%-9s %-22s %12s %14s %12s %10s %13s %13s\n", "network", "input", "forward ms", "fwd+bwd ms",
              "img/s (train)", "step ms", "steady MiB", "peak MiB");
  tensor::Json results(tensor::Json::Array{});
  for (const auto& name : o.nets) {
    const Result r = run_one(name, o, device, dtype);
    print_row(r, device, peaks);
    results.push(row_json(r));
  }
  if (!o.json.empty()) {
    tensor::Json doc = tensor::Json::Object{{"backend", o.backend},
                                            {"cpu_kernels", tensor::blas::kernels()},
                                            {"dtype", o.amp.empty() ? o.dtype : o.amp},
                                            {"amp", o.amp},
                                            {"iterations", o.iterations},
                                            {"input_grad", o.input_grad},
                                            {"channels_last", o.channels_last},
                                            {"rnn_persist", o.rnn_persist},
                                            {"graph", o.graph},
                                            {"peak_tflops", peaks.tflops},
                                            {"peak_gbps", peaks.gbps}};
#ifdef CUDNN_NN_HAVE_CUDA
    if (device.is_cuda()) doc.set("flags", cudnn::config().str());
#endif
    doc.set("results", results);
    const std::string text = doc.dump(2) + "\n";
    tensor::write_file_atomic(o.json, text.data(), text.size(), "convnet_benchmark --json");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return samples::run_main("convnet_benchmark", argc, argv, parse, run); }
