// Fuse.cpp
//
// Note [Fusion as a rewrite]
// A fused pair is a module of its own (cudnn.FusedConvolution, cudnn.FusedBatchNormalization;
// both nn/FusedPair.h), never a flag on the two: a
// convolution whose output silently held act(conv) and an activation that passed its input
// through printed and saved as two plain modules, and broke twin substitutability (a module
// inserted between them, or either reused alone, computed something else). The rewrite keeps
// the pair's modules and parameters (their order too; the state names gain the pair's index:
// "2.weight" becomes "1.0.weight"), and the nn module of the fused pair computes what the pair
// computes.
#include "cudnn/Fuse.h"

#include "cudnn/BatchNormalization.h"
#include "cudnn/ConvolutionBase.h"
#include "cudnn/FusedBatchNormalization.h"
#include "cudnn/FusedConvolution.h"
#include "cudnn/FusedResidual.h"
#include "nn/Sequential.h"

namespace cudnn {

namespace {

bool is_fused(const nn::Module& m) {
  return dynamic_cast<const nn::FusedConvolution*>(&m) || dynamic_cast<const nn::FusedBatchNormalization*>(&m) ||
         dynamic_cast<const nn::FusedResidual*>(&m);
}

// The fused module for the pair (first, act), or nullptr where they do not fuse: a plain
// convolution twin and a ReLU, Tanh or Sigmoid twin; a batch-norm twin and a ReLU twin; a
// cudnn.Residual whose block is a Sequential ending in a batch-norm twin, and a ReLU twin.
nn::ModulePtr fused_pair(const nn::ModulePtr& first, const nn::ModulePtr& act) {
  if (!first || !act || !detail::fusable_activation(*act)) return nullptr;
  const auto* c = dynamic_cast<const detail::FusableConvolution*>(first.get());
  if (c && c->fusable()) return std::make_shared<FusedConvolution>(first, act);
  if (detail::fusable_batch_norm(first, act)) return std::make_shared<FusedBatchNormalization>(first, act);
  if (detail::fusable_residual(first, act)) return std::make_shared<FusedResidual>(first, act);
  return nullptr;
}

// Rewrites the pairs of every Sequential in m, children first.
int fuse_pairs(nn::Module& m) {
  std::vector<nn::ModulePtr>* children = m.children();
  if (!children || is_fused(m)) return 0;
  int n = 0;
  for (size_t i = 0; i < children->size(); ++i) n += fuse_pairs(nn::child_at(m, *children, i, "fuse"));
  if (!dynamic_cast<nn::Sequential*>(&m)) return n;
  for (size_t i = 0; i + 1 < children->size(); ++i) {
    nn::ModulePtr fused = fused_pair((*children)[i], (*children)[i + 1]);
    if (!fused) continue;
    const nn::Module& first = *(*children)[i];
    // the switches the pair had (the constructor's add() leaves the children's as they are)
    if (!first.isTraining()) fused->evaluate();
    if (!first.gradInputNeeded()) fused->setGradInputNeeded(false);
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
  if (dynamic_cast<const nn::FusedConvolution*>(&m)) return 0;
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
  const bool sequential = dynamic_cast<nn::Sequential*>(&m) && !is_fused(m);
  for (size_t i = 0; i < children->size(); ++i) {
    n += unfuse_pairs(nn::child_at(m, *children, i, "unfuse"));
    if (!is_fused(*(*children)[i])) continue;
    std::vector<nn::ModulePtr> pair = dynamic_cast<nn::Sequential&>(*(*children)[i]).modules;
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
