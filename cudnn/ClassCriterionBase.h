// ClassCriterionBase.h: what the four cudnn classification criteria share. ClassNLL takes
// log-probabilities; CrossEntropy and its Spatial/Volumetric forms take scores and apply
// cuDNN's log-softmax over the classes first. All keep their nn criterion's weights,
// sizeAverage and ignoreIndex, check shapes with nn's own checks, and compute with
// cudnn::NLLPlan (cudnn/ops/nll.h): the loss costs one host read, the gradient none.
// Cross entropy of float16/bfloat16 scores computes in float32 (logProbs is then float32).
#pragma once

#include "cudnn/core/Twin.h"
#include "cudnn/ops/nll.h"
#include "nn/Buffers.h"

namespace cudnn {

enum class ClassInput { LogProbabilities, Scores };

// SpatialDims: 0 for [C] / [N x C] inputs, 2 for [N x C x H x W], 3 for [N x C x T x H x W].
template <class Base, int SpatialDims, ClassInput Input>
class ClassCriterionBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  double updateOutput(const tensor::Tensor& input, const tensor::Tensor& target) override {
    const std::string w = this->where("updateOutput");
    const tensor::Tensor x = NLLPlan::canonical(w, input, target, this->weights, SpatialDims);
    if constexpr (Input == ClassInput::Scores) {
      const tensor::Tensor xs = x.to(NLLPlan::crossEntropyDtype(x.dtype()));
      nn::ensure(this->logProbs, input.sizes(), xs);
      this->output = plan_.crossEntropy(w, xs, target, this->weights, this->sizeAverage, this->ignoreIndex,
                                        this->logProbs.view(xs.sizes()));
    } else {
      this->output = plan_.nll(w, x, target, this->weights, this->sizeAverage, this->ignoreIndex);
    }
    return this->output;
  }

  // Targets are checked by the forward pass only: checking them here would wait for the
  // device. Out-of-range targets contribute nothing to the gradient.
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& target) override {
    const std::string w = this->where("updateGradInput");
    const tensor::Tensor x = NLLPlan::canonical(w, input, target, this->weights, SpatialDims);
    const tensor::Tensor dx = nn::ensure(this->gradInput, input.sizes(), x).view(x.sizes());
    if constexpr (Input == ClassInput::Scores) {
      const tensor::Tensor xs = x.to(NLLPlan::crossEntropyDtype(x.dtype()));
      nn::ensure(this->logProbs, input.sizes(), xs);
      plan_.crossEntropyGrad(xs, target, this->weights, this->sizeAverage, this->ignoreIndex,
                             this->logProbs.view(xs.sizes()), dx);
    } else {
      plan_.nllGrad(target, this->weights, this->sizeAverage, this->ignoreIndex, dx);
    }
    return this->gradInput;
  }

 private:
  NLLPlan plan_;
};

}  // namespace cudnn
