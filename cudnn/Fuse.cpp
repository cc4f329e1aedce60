// Fuse.cpp
//
// Note [Fusion as a rewrite]
// A fused pair is a module of its own, cudnn.FusedConvolution, never a flag on the two: a
// convolution whose output silently held act(conv) and an activation that passed its input
// through printed and saved as two plain modules, and broke twin substitutability (a module
// inserted between them, or either reused alone, computed something else). The rewrite keeps
// the pair's modules and parameters (their order too; the state names gain the pair's index:
// "2.weight" becomes "1.0.weight"), and an nn.FusedConvolution computes what the pair computes.
#include "cudnn/Fuse.h"

#include "cudnn/ConvolutionBase.h"
#include "cudnn/FusedConvolution.h"
#include "nn/Sequential.h"

namespace cudnn {

namespace {

bool fusable_pair(const nn::ModulePtr& conv, const nn::ModulePtr& act) {
  const auto* c = dynamic_cast<const detail::FusableConvolution*>(conv.get());
  return c && c->fusable() && act && detail::fusable_activation(*act);
}

// Rewrites the pairs of every Sequential in m, children first.
int fuse_pairs(nn::Module& m) {
  std::vector<nn::ModulePtr>* children = m.children();
  if (!children || dynamic_cast<nn::FusedConvolution*>(&m)) return 0;
  int n = 0;
  for (size_t i = 0; i < children->size(); ++i) n += fuse_pairs(nn::child_at(m, *children, i, "fuse"));
  if (!dynamic_cast<nn::Sequential*>(&m)) return n;
  for (size_t i = 0; i + 1 < children->size(); ++i) {
    if (!fusable_pair((*children)[i], (*children)[i + 1])) continue;
    const nn::Module& conv = *(*children)[i];
    auto fused = std::make_shared<FusedConvolution>((*children)[i], (*children)[i + 1]);
    // the switches the pair had (the constructor's add() leaves the children's as they are)
    if (!conv.isTraining()) fused->evaluate();
    if (!conv.gradInputNeeded()) fused->setGradInputNeeded(false);
    if (m.freesIntermediateGradients()) fused->setFreeIntermediateGradients(true);
    (*children)[i] = std::move(fused);
    children->erase(children->begin() + static_cast<std::ptrdiff_t>(i) + 1);
    ++n;
  }
  return n;
}

// Applies `one` to every convolution twin in m, at any depth, but those of a fused pair.
template <class One>
int each_convolution(nn::Module& m, One&& one) {
  if (dynamic_cast<nn::FusedConvolution*>(&m)) return 0;
  int n = 0;
  if (auto* conv = dynamic_cast<detail::FusableConvolution*>(&m)) n += one(*conv, m);
  if (std::vector<nn::ModulePtr>* children = m.children()) {
    for (size_t i = 0; i < children->size(); ++i) n += each_convolution(nn::child_at(m, *children, i, "fuse"), one);
  }
  return n;
}

// Gives back the pairs of every FusedConvolution below m.
int unfuse_pairs(nn::Module& m) {
  std::vector<nn::ModulePtr>* children = m.children();
  if (!children) return 0;
  int n = 0;
  const bool sequential = dynamic_cast<nn::Sequential*>(&m) && !dynamic_cast<nn::FusedConvolution*>(&m);
  for (size_t i = 0; i < children->size(); ++i) {
    n += unfuse_pairs(nn::child_at(m, *children, i, "unfuse"));
    auto* fused = dynamic_cast<nn::FusedConvolution*>((*children)[i].get());
    if (!fused) continue;
    std::vector<nn::ModulePtr> pair = fused->modules;
    if (sequential) {
      (*children)[i] = pair[0];
      children->insert(children->begin() + static_cast<std::ptrdiff_t>(i) + 1, pair[1]);
      ++i;
    } else {
      (*children)[i] = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{pair[0], pair[1]});
    }
    ++n;
  }
  return n;
}

}  // namespace

int fuse(nn::Module& net) {
  int n = fuse_pairs(net);
  // The other convolutions with a bias (those before a batch norm, say): conv + bias as one
  // operation where a timed search finds that faster (Note [Fusing a bias alone]).
  n += each_convolution(net, [](detail::FusableConvolution& conv, nn::Module& m) {
    const auto* c = dynamic_cast<const nn::ConvolutionBase*>(&m);
    if (!conv.fusable() || conv.fusedBias() || !c || !c->bias.defined()) return 0;
    conv.setFusedBias(true);
    return 1;
  });
  return n;
}

int unfuse(nn::Module& net) {
  int n = unfuse_pairs(net);
  n += each_convolution(net, [](detail::FusableConvolution& conv, nn::Module&) {
    if (!conv.fusedBias()) return 0;
    conv.setFusedBias(false);
    return 1;
  });
  return n;
}

}  // namespace cudnn
