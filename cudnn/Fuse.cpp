// Fuse.cpp
#include "cudnn/Fuse.h"

#include "cudnn/ConvolutionBase.h"
#include "cudnn/PointwiseBase.h"
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
    nn::Module& child = *(*children)[i];
    n += walk(child, pair);
    if (!sequential || i + 1 >= children->size()) continue;
    auto* conv = dynamic_cast<detail::FusableConvolution*>(&child);
    auto* act = dynamic_cast<FusableActivation*>((*children)[i + 1].get());
    if (conv && act) n += pair(*conv, *act);
  }
  return n;
}

}  // namespace

int fuse(nn::Module& net) {
  return walk(net, [](detail::FusableConvolution& conv, FusableActivation& act) {
    const std::optional<Activation> mode = act.fusableMode();
    if (!conv.fusable() || !mode || act.fusedIntoInput()) return 0;
    conv.setFusedActivation(mode);
    act.setFusedIntoInput(true);
    return 1;
  });
}

int unfuse(nn::Module& net) {
  return walk(net, [](detail::FusableConvolution& conv, FusableActivation& act) {
    if (!act.fusedIntoInput()) return 0;
    conv.setFusedActivation(std::nullopt);
    act.setFusedIntoInput(false);
    return 1;
  });
}

}  // namespace cudnn
