// FusedConvolution.cpp
//
// Note [Fused convolution]
// The fused forward never forms conv(x) + bias: the convolution twin writes act(...) straight
// into this module's output, and its own `output` is left empty, so nothing reads a stale or
// activated value as the convolution's result. The activation's output is this output, and
// backward hands the activation that output as its input: ReLU, Tanh and Sigmoid, the only
// activations fused, take their gradient from the output alone (Note [In-place activation
// gradients] in cudnn/PointwiseBase.h). Backward is then the Sequential's: the activation's
// gradient, then the convolution's passes.
//
// Note [Fused pairs with wrapped children]
// A slot may hold a wrapper standing for the child (nn/ModuleWrapper.h: a sharded block of
// dist::ShardedDataParallel, which gathers the child's parameters in its forward and backward).
// The fused passes reach the children's kernels directly, past the wrapper, so they look at the
// slots themselves, not through unwrapped(): a wrapper is not a convolution, batch norm or
// residual twin, and the pair (FusedConvolution, FusedBatchNormalization, FusedResidual, and a
// FusedResidual's batch norm) then computes in turn, each child through its slot, as nn does.
// The nn side's typed accessors (nn/FusedPair.h) do see through it.
#include "cudnn/FusedConvolution.h"

#include "cudnn/ConvolutionBase.h"

namespace cudnn {

const tensor::Tensor& FusedConvolution::updateOutput(const tensor::Tensor& input) {
  checkModules("updateOutput");
  auto* conv = dynamic_cast<detail::FusableConvolution*>(modules[0].get());
  if (!conv || !conv->fusable() || !detail::fusable_activation(*modules[1]) || !input.is_cuda()) {
    return nn::FusedConvolution::updateOutput(input);  // the pair in turn, as nn
  }
  const auto& act = dynamic_cast<const nn::PointwiseBase&>(*modules[1]);
  rethrowErrors(0, [&] { conv->forwardActivated(input, act, output); });
  modules[0]->output = tensor::Tensor();
  modules[1]->output = output;
  childInputs() = {input, output};
  return output;
}

}  // namespace cudnn
