// FusedTwin.h: the pass structure the fused twins share (cudnn::FusedBatchNormalization,
// cudnn::FusedResidual; nn/FusedPair.h is their nn side). A forward either runs fused,
// writing `output` itself, or leaves the children to compute in turn, as nn does. The
// backward passes follow the forward: fused after a fused forward whose children still fit,
// else the Sequential's (which is correct after a fused forward too, only slower: each fused
// twin leaves the records a whole backward needs).
#pragma once

#include "cudnn/Twin.h"

namespace cudnn::detail {

enum class FusedPass { GradInput, Parameters, Both };

template <class Base>
class FusedTwin : public Twin<Base> {
 public:
  using Twin<Base>::Twin;
  using Tensor = tensor::Tensor;

  const Tensor& updateOutput(const Tensor& input) override {
    this->checkModules("updateOutput");
    forwardFused_ = input.is_cuda() && fusable();
    if (!forwardFused_) return Base::updateOutput(input);
    forwardFused(input);
    return this->output;
  }
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    if (!backwardFusable()) return Base::updateGradInput(input, gradOutput);
    backwardFused(input, gradOutput, FusedPass::GradInput, 1.0);
    return this->gradInput;
  }
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override {
    if (!backwardFusable()) return Base::accGradParameters(input, gradOutput, scale);
    backwardFused(input, gradOutput, FusedPass::Parameters, scale);
  }

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override {
    if (!backwardFusable()) return Base::backwardImpl(input, gradOutput, scale);
    backwardFused(input, gradOutput, FusedPass::Both, scale);
  }

  // Whether the children fit the fused computation (checked before each pass).
  virtual bool fusable() const = 0;
  // The fused forward into output.
  virtual void forwardFused(const Tensor& input) = 0;
  // gradInput (GradInput, Both) and the parameter gradients (Parameters, Both) of it.
  virtual void backwardFused(const Tensor& input, const Tensor& gradOutput, FusedPass pass, double scale) = 0;
  // The Module method a pass stands for, for errors.
  static const char* method_of(FusedPass pass) {
    return pass == FusedPass::GradInput    ? "updateGradInput"
           : pass == FusedPass::Parameters ? "accGradParameters"
                                           : "backward";
  }

 private:
  bool backwardFusable() const { return forwardFused_ && fusable(); }
  bool forwardFused_ = false;
};

}  // namespace cudnn::detail
