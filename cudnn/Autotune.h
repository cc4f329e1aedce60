// Autotune.h: cudnn::autotune(net, example) makes a cudnn network as fast as this library
// knows how, by rewrites you can see, and says what it did:
//   - fusion: cudnn::fuse (Fuse.h), so convolution + activation, batch norm + ReLU and ResNet's
//     units run as fused cuDNN operations;
//   - layout: it times the network's pass on `example` (forward + backward in training mode,
//     forward alone in evaluation mode) row-major and channels-last, and keeps channels-last
//     only where that is faster by at least `minGain`. Channels-last means the filters laid out
//     NHWC (Module::to(MemoryFormat)) and the network wrapped as
//       nn.Sequential { cudnn.Contiguous(channels_last) -> net [-> cudnn.Contiguous] }
//     so the caller still hands in and gets back row-major tensors (the trailing module only
//     where the output is 4-d or 5-d), and every layer between runs NHWC (Note [Channels-last
//     twins] in cudnn/core/Layout.h).
// What the timing runs leaves no trace in the network's state: its gradients, buffers (running
// statistics) and the default generator are restored, so a training run that autotunes first
// computes what it would have computed without it. Module outputs hold the last pass's values.
// Call it before building the optimizer (the layout change replaces the filter tensors, as
// Module::to does), after setting the network's switches (setGradInputNeeded,
// setFreeIntermediateGradients, train / evaluate: the wrapper takes them from the network), and
// use the returned pointer, which differs from `net` when the network was wrapped. Calling it
// again on its own result unwraps first, so it does not nest. Not every network is timed: the
// report's `skipped` says why (a float64 or not 4-d / 5-d example, no cudnn module, the flag
// channels_last=true, which already runs every layer NHWC).
// Data parallelism: autotune before wrapping the network in dist::DistributedDataParallel (whose
// backward hooks would all-reduce during the timing passes), and give every rank the same layout,
// which separate timings need not give: time on one rank and pass its choice to the others as
// LayoutChoice::ChannelsLast or Keep.
#pragma once

#include <string>

#include "nn/Module.h"

namespace cudnn {

// Timed: measure both layouts and keep the faster (the default); Keep: leave the layout as it
// is; ChannelsLast: make it channels-last (wrapped as above) without timing, where the caller
// already knows. ChannelsLast with an example the layouts cannot be timed on is an error.
enum class LayoutChoice { Timed, Keep, ChannelsLast };

struct AutotuneOptions {
  bool fuse = true;  // cudnn::fuse first
  LayoutChoice layout = LayoutChoice::Timed;
  int warmup = 3;         // untimed passes per layout (the algorithm searches run in the first)
  int iterations = 10;    // timed passes per layout; the median counts
  double minGain = 0.02;  // channels-last is kept where it takes at most (1 - minGain) x the row-major time
};

struct AutotuneReport {
  int fused = 0;  // what cudnn::fuse rewrote
  bool timed = false;
  std::string skipped;  // why the layouts were not timed, when they were not ("layout: channels_last": asked)
  double rowMajorMs = 0, channelsLastMs = 0;  // median pass times, when timed
  tensor::MemoryFormat chosen = tensor::MemoryFormat::Contiguous;
  // "fused 69; row-major 20.1 ms, channels-last 13.4 ms per pass: channels-last (1.50x)"
  std::string str() const;
};

nn::ModulePtr autotune(nn::ModulePtr net, const tensor::Tensor& example, const AutotuneOptions& options = {},
                       AutotuneReport* report = nullptr);

}  // namespace cudnn
