// Fuse.cpp
#include "cudnn/Fuse.h"

#include "cudnn/ConvolutionBase.h"
#include "cudnn/PointwiseBase.h"
#include "nn/ConvolutionBase.h"
#include "nn/Sequential.h"

namespace cudnn {

namespace {

// Applies `pair` to every (convolution, activation) neighbour pair of every Sequential in m.
template <class Pair>
int walk(nn::Module& m, Pair&& pair) {
  int n = 0;
  std::vector<nn::ModulePtr>* children = m.children();
  if (!children) return 0;
  const bool sequential = dynamic_cast<nn::Sequential*>(&m) != nullptr;
  for (size_t i = 0; i < children->size(); ++i) {
    nn::Module& child = nn::child_at(m, *children, i, "fuse");
    n += walk(child, pair);
    if (!sequential || i + 1 >= children->size()) continue;
    auto* conv = dynamic_cast<detail::FusableConvolution*>(&child);
    auto* act = dynamic_cast<FusableActivation*>((*children)[i + 1].get());
    if (conv && act) n += pair(*conv, *act);
  }
  return n;
}

// Applies `one` to every convolution twin in m, at any depth.
template <class One>
int each_convolution(nn::Module& m, One&& one) {
  int n = 0;
  if (auto* conv = dynamic_cast<detail::FusableConvolution*>(&m)) n += one(*conv, m);
  if (std::vector<nn::ModulePtr>* children = m.children()) {
    for (size_t i = 0; i < children->size(); ++i) n += each_convolution(nn::child_at(m, *children, i, "fuse"), one);
  }
  return n;
}

}  // namespace

int fuse(nn::Module& net) {
  int n = walk(net, [](detail::FusableConvolution& conv, FusableActivation& act) {
    const std::optional<Activation> mode = act.fusableMode();
    if (!conv.fusable() || !mode || act.fusedIntoInput()) return 0;
    conv.setFusedActivation(mode);
    act.setFusedIntoInput(true);
    return 1;
  });
  // The other convolutions with a bias (those before a batch norm, say): conv + bias as one
  // operation where a timed search finds that faster (Note [Fusing a bias alone]).
  n += each_convolution(net, [](detail::FusableConvolution& conv, nn::Module& m) {
    const auto* c = dynamic_cast<const nn::ConvolutionBase*>(&m);
    if (!conv.fusable() || conv.fusedActivation() || conv.fusedBias() || !c || !c->bias.defined()) return 0;
    conv.setFusedBias(true);
    return 1;
  });
  return n;
}

int unfuse(nn::Module& net) {
  int n = walk(net, [](detail::FusableConvolution& conv, FusableActivation& act) {
    if (!act.fusedIntoInput()) return 0;
    conv.setFusedActivation(std::nullopt);
    act.setFusedIntoInput(false);
    return 1;
  });
  n += each_convolution(net, [](detail::FusableConvolution& conv, nn::Module&) {
    if (!conv.fusedBias()) return 0;
    conv.setFusedBias(false);
    return 1;
  });
  return n;
}

}  // namespace cudnn
