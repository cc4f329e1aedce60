// FusedBatchNormalization.cpp
//
// Note [Fused batch normalization]
// As in Note [Fused convolution]: the batch norm writes relu(bn(x)) straight into this module's
// output and its own `output` is left empty; the ReLU's output is this output. Backward hands
// cuDNN that output, which masks the gradient by y > 0 (relu' from the output, Note [In-place
// activation gradients] in cudnn/PointwiseBase.h), and takes the batch norm's gradients in the
// same call. A backward after a forward in turn, or with children changed since, is the
// Sequential's: the ReLU's gradient from its output, then the batch norm's (which, finding no
// fused forward of its own, runs the plain call). A wrapper in a slot: the pair in turn
// (Note [Fused pairs with wrapped children] in cudnn/FusedConvolution.cpp).
#include "cudnn/FusedBatchNormalization.h"

#include "cudnn/BatchNormalization.h"

namespace cudnn {

detail::FusableBatchNorm* detail::fusable_batch_norm(const nn::ModulePtr& bn, const nn::ModulePtr& act) {
  if (!bn || !act || act->backendKind() != nn::Backend::cudnn) return nullptr;
  const auto* a = dynamic_cast<const nn::PointwiseBase*>(act.get());
  if (!a || a->activation() != nn::Activation::ReLU) return nullptr;
  return dynamic_cast<FusableBatchNorm*>(bn.get());
}

bool FusedBatchNormalization::fusable() const {
  return modules.size() == 2 && detail::fusable_batch_norm(modules[0], modules[1]);
}

void FusedBatchNormalization::forwardFused(const tensor::Tensor& input) {
  rethrowErrors(0, [&] { detail::fusable_batch_norm(modules[0], modules[1])->forwardReLU(input, {}, output); });
  modules[1]->output = output;
  childInputs() = {input, output};
}

void FusedBatchNormalization::backwardFused(const tensor::Tensor& input, const tensor::Tensor& gradOutput,
                                            detail::FusedPass pass, double scale) {
  using detail::FusedPass;
  // backward() asks for gradInput only where the batch norm would (Note [gradInput not needed])
  const bool wantGradInput = pass == FusedPass::GradInput || (pass == FusedPass::Both && modules[0]->gradInputNeeded());
  const char* method = method_of(pass);
  rethrowErrors(0, [&] {
    detail::fusable_batch_norm(modules[0], modules[1])
        ->backwardReLU(input, output, gradOutput, nullptr, wantGradInput, pass != FusedPass::GradInput, scale, method);
  });
  if (wantGradInput) {
    gradInput = modules[0]->gradInput;
  } else if (pass == FusedPass::Both) {
    gradInput = tensor::Tensor();
  }
}

}  // namespace cudnn
