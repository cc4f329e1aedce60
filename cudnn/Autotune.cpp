// Autotune.cpp
//
// Note [Choosing the layout by timing it]
// Channels-last is the fast layout for 16-bit convolutions on Tensor Cores, but not for every
// network: a float32 network of few, small convolutions can lose more to the layout changes
// at its ends than it gains inside, and which engines a GPU has decides the rest. So the
// choice is measured, as PyTorch users measure it by hand, on the caller's own network and
// example: the same passes (forward + backward, or forward alone in evaluation mode) row-major
// and then channels-last, warm-up first (the benchmark-mode searches run there), each pass
// followed by a device synchronisation, the median of `iterations` counting. The channels-last
// candidate is timed wrapped, ends included, exactly as it will run. State the passes touch is
// put back afterwards: the gradients accumulate and the batch norms' running statistics move
// in a training pass, and dropout draws from the default generator.
#include "cudnn/Autotune.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

#include "cudnn/Config.h"
#include "cudnn/Contiguous.h"
#include "cudnn/Fuse.h"
#include "nn/Sequential.h"
#include "tensor/Cuda.h"
#include "tensor/Generator.h"

namespace cudnn {

namespace {

using tensor::MemoryFormat;
using tensor::Tensor;

bool is_layout(const nn::ModulePtr& m, MemoryFormat format) {
  const auto* c = dynamic_cast<const nn::Contiguous*>(m.get());
  return c && c->format() == format;
}

// autotune's wrapper, nn.Sequential { Contiguous(channels_last) -> net [-> Contiguous] }, or nullptr.
nn::Sequential* as_wrapper(const nn::ModulePtr& m) {
  auto* s = dynamic_cast<nn::Sequential*>(m.get());
  if (!s || s->type_name() != nn::Sequential::kTypeName) return nullptr;  // not a fused pair
  const std::vector<nn::ModulePtr>& k = s->modules;
  if (k.size() != 2 && k.size() != 3) return nullptr;
  if (!is_layout(k[0], MemoryFormat::ChannelsLast) || !k[1]) return nullptr;
  if (k.size() == 3 && !is_layout(k[2], MemoryFormat::Contiguous)) return nullptr;
  return s;
}

// The wrapped network; a switch-off of the input gradient set on the wrapper passes to it.
nn::ModulePtr unwrap(const nn::ModulePtr& net) {
  nn::Sequential* w = as_wrapper(net);
  if (!w) return net;
  if (!w->gradInputNeeded()) w->modules[1]->setGradInputNeeded(false);
  return w->modules[1];
}

// The network keeps its own switches; the wrapper takes those that concern its input and its
// children's buffers. Without an input gradient the network computes none, and the front module,
// with no parameters, then takes no gradient either (Module::backward).
nn::ModulePtr wrap(const nn::ModulePtr& net, bool spatialOutput) {
  auto w = std::make_shared<nn::Sequential>();
  w->add(std::make_shared<cudnn::Contiguous>(MemoryFormat::ChannelsLast));
  w->add(net);
  if (spatialOutput) w->add(std::make_shared<cudnn::Contiguous>(MemoryFormat::Contiguous));
  if (!net->gradInputNeeded()) w->setGradInputNeeded(false);
  if (net->freesIntermediateGradients()) w->setFreeIntermediateGradients(true);
  if (!net->isTraining()) w->evaluate();
  w->to(net->device());
  return w;
}

bool uses_cudnn(nn::Module& net) {
  bool found = false;
  net.apply([&](nn::Module& m) { found = found || m.backendKind() == nn::Backend::cudnn; });
  return found;
}

bool has_channels_last_parameter(nn::Module& net) {
  for (const Tensor& p : net.parameters()) {
    if ((p.dim() == 4 || p.dim() == 5) && !p.is_contiguous() && p.is_contiguous(MemoryFormat::ChannelsLast)) {
      return true;
    }
  }
  return false;
}

// What a pass changes: the gradients, the buffers, the default generator.
class SavedState {
 public:
  explicit SavedState(nn::Module& net) : generator_(tensor::default_generator()) {
    for (auto& [name, g] : net.namedGradParameters())
      if (g.defined()) grads_[name] = g.clone();
    for (auto& [name, b] : net.namedBuffers())
      if (b.defined()) buffers_[name] = b.clone();
  }
  // By name: a layout change may have replaced the tensors since.
  void restore(nn::Module& net) const {
    for (auto& [name, g] : net.namedGradParameters()) {
      auto it = grads_.find(name);
      if (it != grads_.end() && g.defined()) Tensor(g).copy_(it->second);
    }
    for (auto& [name, b] : net.namedBuffers()) {
      auto it = buffers_.find(name);
      if (it != buffers_.end() && b.defined()) Tensor(b).copy_(it->second);
    }
    tensor::default_generator() = generator_;
  }

 private:
  tensor::Generator generator_;
  std::map<std::string, Tensor> grads_, buffers_;
};

// The median time of one pass of `net` on x, in ms, after `warmup` untimed ones.
double time_passes(nn::Module& net, const Tensor& x, const AutotuneOptions& o) {
  const int device = x.device().index;
  tensor::Generator gen(20261126);
  Tensor gradOutput;
  auto pass = [&] {
    const Tensor& y = net.forward(x);
    if (!net.isTraining() || !tensor::is_floating(y.dtype())) return;
    if (!gradOutput.defined() || gradOutput.sizes() != y.sizes() || gradOutput.dtype() != y.dtype()) {
      gradOutput = tensor::uniform(y.sizes(), -1, 1, gen, y.dtype(), y.device()).contiguous(suggest_memory_format(y));
    }
    net.backward(x, gradOutput);
  };
  for (int i = 0; i < o.warmup; ++i) pass();
  tensor::cuda::synchronize(device);
  std::vector<double> ms;
  for (int i = 0; i < o.iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    tensor::cuda::synchronize(device);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

// Why the layouts cannot be timed for this network and example, or "".
std::string layout_refusal(nn::Module& net, const Tensor& example) {
  if (!uses_cudnn(net)) return "the network has no cudnn module (convert it first)";
  if (!example.defined()) return "no example";
  if (!example.device().is_cuda()) return "the example is on " + example.device().str() + ", not a CUDA device";
  if (example.dim() != 4 && example.dim() != 5) {
    return "the example is " + tensor::shape_str(example.sizes()) + ", not a 4-d or 5-d batch";
  }
  if (example.dtype() == tensor::DType::Float64) return "float64 data always computes row-major";
  if (!tensor::is_floating(example.dtype())) return "the example is not floating-point";
  if (config().channels_last) return "the flag channels_last=true already runs every layer channels-last";
  return "";
}

std::string ms_str(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f ms", v);
  return text;
}

// Times the two layouts (or takes channels-last, as asked) and returns the network to use.
nn::ModulePtr choose_layout(const nn::ModulePtr& net, const Tensor& example, const AutotuneOptions& o,
                            AutotuneReport& r) {
  const bool timed = o.layout == LayoutChoice::Timed;
  const bool wasChannelsLast = has_channels_last_parameter(*net);
  const SavedState saved(*net);
  nn::ModulePtr wrapped;
  try {
    if (timed) {
      net->to(MemoryFormat::Contiguous);
      r.rowMajorMs = time_passes(*net, example, o);
    }
    net->to(MemoryFormat::ChannelsLast);
    const Tensor& y = net->forward(example.contiguous(MemoryFormat::ChannelsLast));
    wrapped = wrap(net, y.dim() == 4 || y.dim() == 5);
    if (timed) r.channelsLastMs = time_passes(*wrapped, example, o);
  } catch (const std::exception& e) {
    net->to(wasChannelsLast ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous);
    saved.restore(*net);
    throw tensor::Error(std::string("cudnn::autotune: a pass on the example failed: ") + e.what());
  }
  r.timed = timed;
  const bool channelsLast = !timed || r.channelsLastMs <= (1 - o.minGain) * r.rowMajorMs;
  if (channelsLast) {
    r.chosen = MemoryFormat::ChannelsLast;
  } else {
    net->to(MemoryFormat::Contiguous);
  }
  saved.restore(*net);
  return channelsLast ? wrapped : net;
}

}  // namespace

std::string AutotuneReport::str() const {
  std::string s = "fused " + std::to_string(fused) + "; ";
  if (!timed) {
    return s + (chosen == MemoryFormat::ChannelsLast ? "channels-last, as asked (not timed)"
                                                     : "layout not timed: " + skipped);
  }
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2fx", channelsLastMs > 0 ? rowMajorMs / channelsLastMs : 0.0);
  return s + "row-major " + ms_str(rowMajorMs) + ", channels-last " + ms_str(channelsLastMs) +
         " per pass: " + (chosen == MemoryFormat::ChannelsLast ? "channels-last" : "row-major") + " (" + ratio + ")";
}

nn::ModulePtr autotune(nn::ModulePtr net, const Tensor& example, const AutotuneOptions& options,
                       AutotuneReport* report) {
  if (!net) throw tensor::Error("cudnn::autotune: expected a network, got nullptr");
  if (options.iterations < 1 || options.warmup < 0 || !(options.minGain >= 0 && options.minGain < 1)) {
    throw tensor::Error("cudnn::autotune: expected iterations >= 1, warmup >= 0 and 0 <= minGain < 1, got " +
                        std::to_string(options.iterations) + ", " + std::to_string(options.warmup) + " and " +
                        std::to_string(options.minGain));
  }
  AutotuneReport r;
  net = unwrap(net);
  if (options.fuse) r.fused = fuse(*net);
  nn::ModulePtr result = net;
  if (options.layout == LayoutChoice::Keep) {
    r.skipped = "layout: keep";
  } else {
    r.skipped = layout_refusal(*net, example);
    if (!r.skipped.empty() && options.layout == LayoutChoice::ChannelsLast) {
      throw tensor::Error("cudnn::autotune: layout ChannelsLast: " + r.skipped);
    }
    if (r.skipped.empty()) result = choose_layout(net, example, options, r);
  }
  if (report) *report = r;
  return result;
}

}  // namespace cudnn
