// CountedWork.h: the work one pass of a network must do, counted from its modules' types and
// the shapes its last forward left, for the roofline columns of convnet_benchmark
// (samples/benchmark.cpp) and scripts/bench_torch.py: FLOPs (a multiply-add is two) and the
// minimum bytes a pass moves, forward and backward (Note [Counted work] in CountedWork.cpp).
//   net.forward(x);
//   const samples::CountedWork w = samples::count_work(net, x.sizes(), x.dtype(), inputGrad);
//   w.forward.tflops(ms), w.forwardBackward().gbps(ms)
// A cudnn twin counts as its nn module (it derives from it), fused modules as their parts.
// Leaves it does not know count as nothing and are named in `uncounted`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/Module.h"

namespace samples {

struct Work {
  double flops = 0, bytes = 0;

  Work& operator+=(const Work& o) {
    flops += o.flops;
    bytes += o.bytes;
    return *this;
  }
  friend Work operator+(Work a, const Work& b) { return a += b; }
  friend Work operator-(Work a, const Work& b) { return {a.flops - b.flops, a.bytes - b.bytes}; }
  // achieved rates for a pass of `ms` milliseconds
  double tflops(double ms) const { return flops / (ms / 1000) / 1e12; }
  double gbps(double ms) const { return bytes / (ms / 1000) / 1e9; }
};

struct CountedWork {
  Work forward;                // one forward, in training mode
  Work backward;               // the backward after it: each needed gradInput and every parameter's gradient
  int64_t parameters = 0;      // the network's parameter elements (the optimizer's share of a step)
  int64_t outputElements = 0;  // the network's output (the loss's share of a step)
  size_t itemsize = 0;         // bytes per element of the run's dtype
  // the top-level children of a Sequential, each counted as it runs inside the network
  // (convnet_benchmark --per-layer times them alone)
  std::vector<CountedWork> layers;
  std::vector<std::string> uncounted;  // type names of the modules counted as nothing, each once

  Work forwardBackward() const { return forward + backward; }
  // A whole training step: forward and backward, the loss (reads the output, writes its
  // gradient, in `lossItemsize` bytes), and the optimizer's update of every parameter with
  // `optimizerStates` state tensors (SGD with momentum: 1, Adam: 2) kept in `masterItemsize`
  // bytes (float32 master weights in a mixed-precision step; else the run's itemsize).
  Work step(int optimizerStates, size_t lossItemsize, size_t masterItemsize) const;
};

// Counts one pass of `net`, whose last forward ran on an input of shape `input` (every
// module's output then has its shape); `dtype` sizes the bytes; `inputGrad`: whether the
// modules that see the network's input compute their gradInput (Module::setGradInputNeeded).
// Throws tensor::Error where a module's output shape is unknown (no forward ran).
CountedWork count_work(nn::Module& net, const tensor::Shape& input, tensor::DType dtype, bool inputGrad);

}  // namespace samples
