// FusedResidual.cpp
//
// Note [Fused residual]
// ResNet's unit is relu(block(x) + shortcut(x)) with block = (..., conv, bn). Here the block's
// children but the batch norm run as its Sequential runs them (forwardFirst and the *First
// backward passes, which keep its records), the shortcut as it is (the identity: x), and the
// batch norm takes the shortcut's output as its addend: one cuDNN pass writes relu(bn(h) + s)
// into this module's output, and one backward pass gives h's gradient, the parameters' and the
// sum's gradient through the ReLU (gradSum_), which is the shortcut's gradOutput. The Residual's,
// the block's and the batch norm's own outputs are left empty (the pre-activation sum is never
// formed); the ReLU's output is this output. gradInput is the block's gradInput plus the
// shortcut's, as the Residual sums them; in a backward that frees the intermediate gradients,
// the block's first convolution adds its own onto the shortcut's in its product where it can
// (Note [An input gradient onto an addend] in ConvolutionBase.cpp). A whole backward after
// this forward, should the children change, still works: the block's records include the batch
// norm's input. A wrapper in the Residual's slot or the batch norm's: in turn (Note [Fused pairs
// with wrapped children] in cudnn/FusedConvolution.cpp).
#include "cudnn/FusedResidual.h"

#include "cudnn/BatchNormalization.h"
#include "cudnn/ConvolutionBase.h"
#include "cudnn/FusedBatchNormalization.h"
#include "nn/Buffers.h"

namespace cudnn {

namespace {
nn::Sequential* block_of(const nn::Residual& r) { return dynamic_cast<nn::Sequential*>(r.block().get()); }
}  // namespace

bool detail::fusable_residual(const nn::ModulePtr& residual, const nn::ModulePtr& act) {
  if (!residual || residual->backendKind() != nn::Backend::cudnn) return false;
  const auto* r = dynamic_cast<const nn::Residual*>(residual.get());
  const nn::Sequential* block = r ? block_of(*r) : nullptr;
  return block && !block->modules.empty() && fusable_batch_norm(block->modules.back(), act);
}

bool FusedResidual::fusable() const { return modules.size() == 2 && detail::fusable_residual(modules[0], modules[1]); }

void FusedResidual::forwardFused(const tensor::Tensor& input) {
  auto& r = dynamic_cast<nn::Residual&>(*modules[0]);
  nn::Sequential& block = *block_of(r);
  const size_t k = block.modules.size() - 1;
  auto* bn = detail::fusable_batch_norm(block.modules[k], modules[1]);
  rethrowErrors(0, [&] {
    bnInput_ = block.forwardFirst(input, k);
    const tensor::Tensor s = r.shortcut() ? r.shortcut()->forward(input) : input;
    if (s.sizes() != bnInput_.sizes()) {
      throw tensor::Error(r.where("updateOutput") + "expected block and " +
                          (r.shortcut() ? "shortcut" : "identity shortcut (the input)") +
                          " outputs of the same shape, got " + tensor::shape_str(bnInput_.sizes()) + " and " +
                          tensor::shape_str(s.sizes()));
    }
    bn->forwardReLU(bnInput_, s, output);
  });
  r.output = tensor::Tensor();
  block.output = tensor::Tensor();
  modules[1]->output = output;
  childInputs() = {input, output};
}

void FusedResidual::backwardFused(const tensor::Tensor& input, const tensor::Tensor& gradOutput, detail::FusedPass pass,
                                  double scale) {
  using detail::FusedPass;
  auto& r = dynamic_cast<nn::Residual&>(*modules[0]);
  nn::Sequential& block = *block_of(r);
  const size_t k = block.modules.size() - 1;
  nn::Module& bnModule = *block.modules[k];
  auto* bn = detail::fusable_batch_norm(block.modules[k], modules[1]);
  const char* method = method_of(pass);
  rethrowErrors(0, [&] {
    // the batch norm's gradInput feeds the rest of the block; accGradParameters reuses the one
    // updateGradInput left
    const bool bnGradInput = pass != FusedPass::Parameters;
    bn->backwardReLU(bnInput_, output, gradOutput, &gradSum_, bnGradInput, pass != FusedPass::GradInput, scale, method);
    const tensor::Tensor g = bnModule.gradInput;
    const nn::ModulePtr shortcut = r.shortcut();
    tensor::Tensor gb, gs = gradSum_;
    bool summed = false;
    switch (pass) {
      case FusedPass::GradInput:
        gb = block.updateGradInputFirst(input, g, k);
        if (shortcut) gs = shortcut->updateGradInput(input, gradSum_);
        break;
      case FusedPass::Parameters:
        block.accGradParametersFirst(input, g, k, scale);
        if (shortcut) shortcut->accGradParameters(input, gradSum_, scale);
        return;
      case FusedPass::Both:
        // the shortcut first: with the intermediate gradients freed, the block's first
        // convolution may add its gradient onto the shortcut's (Note [An input gradient onto an
        // addend] in cudnn/ConvolutionBase.cpp), which nothing else reads afterwards
        if (shortcut) gs = shortcut->backward(input, gradSum_, scale);
        summed = addsOntoShortcut(input, gs);
        try {
          gb = block.backwardFirst(input, g, k, scale);
        } catch (...) {
          if (summed) firstConvolution()->setGradInputAddend(input, tensor::Tensor());
          throw;
        }
        if (summed) {
          // withdrawn, should the convolution not have taken it; summed only where gs's storage
          // came back holding the sum
          firstConvolution()->setGradInputAddend(input, tensor::Tensor());
          summed = gb.defined() && gb.raw_data() == gs.raw_data();
        }
        break;
    }
    if (pass == FusedPass::Both && !gradInputNeeded()) {
      gradInput = tensor::Tensor();
    } else if (summed) {
      gradInput = gb;  // gs's storage, holding gb + gs
    } else {
      tensor::add_out(nn::ensure(gradInput, gb.sizes(), gb, tensor::suggest_memory_format(gb)), gb, gs);
    }
    if (pass == FusedPass::Both && freesIntermediateGradients()) {
      // summed now: as Residual releases its children's (Note [Freeing intermediate gradients])
      gradSum_ = tensor::Tensor();
      bnModule.releaseGradInput();
      static_cast<nn::Module&>(block).releaseGradInput();  // and its first child's
      if (shortcut) shortcut->releaseGradInput();
    }
  });
}

detail::FusableConvolution* FusedResidual::firstConvolution() const {
  auto& r = dynamic_cast<nn::Residual&>(*modules[0]);
  nn::Sequential& block = *block_of(r);
  return block.modules.size() >= 2 ? dynamic_cast<detail::FusableConvolution*>(block.modules.front().get()) : nullptr;
}

bool FusedResidual::addsOntoShortcut(const tensor::Tensor& input, const tensor::Tensor& gs) {
  detail::FusableConvolution* first = freesIntermediateGradients() && gradInputNeeded() ? firstConvolution() : nullptr;
  return first && first->setGradInputAddend(input, gs);
}

}  // namespace cudnn
