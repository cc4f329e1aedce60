// ClassCriterionBase.h: what the four cudnn classification criteria share. ClassNLL takes
// log-probabilities; CrossEntropy and its Spatial/Volumetric forms take scores and apply a
// log-softmax over the classes first (our one-read kernel for [N x C], cuDNN's otherwise). All
// keep their nn criterion's weights, sizeAverage and ignoreIndex, check shapes with nn's own
// checks, and compute with cudnn::NLLPlan (cudnn/ops/nll.h, behind detail::ClassCriterionCompute):
// the loss costs one host read, the gradient none. Cross entropy of float16/bfloat16 scores
// computes in float32; logProbs keeps the scores' dtype (as PyTorch's log_softmax), rounded from
// the float32 values the loss and the gradient use.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>

#include "cudnn/Twin.h"
#include "nn/ClassCriterionBase.h"

namespace cudnn {

class NLLPlan;  // cudnn/ops/nll.h (not installed)

namespace detail {
// A classification criterion's nn fields, for the compute.
struct ClassCriterionFields {
  const Tensor& weights;
  bool sizeAverage;
  int64_t ignoreIndex;
  int spatialDims;   // 0 for [C] / [N x C] inputs, 2 for [N x C x H x W], 3 for [N x C x T x H x W]
  Tensor* logProbs;  // the cross-entropy criteria's (scores in); nullptr: ClassNLL (log-probabilities in)
};

// The compute of the four classification twins.
class ClassCriterionCompute {
 public:
  ClassCriterionCompute();
  ~ClassCriterionCompute();

  double loss(const std::string& where, const Tensor& input, const Tensor& target, const ClassCriterionFields& f);
  // loss() left on the device, in `out` (made once: a 0-dim float64 tensor on the input's device).
  void lossOnDevice(const std::string& where, const Tensor& input, const Tensor& target, const ClassCriterionFields& f,
                    Tensor& out);
  // Targets are checked by the forward pass only: checking them here would wait for the
  // device. Out-of-range targets contribute nothing to the gradient.
  void gradient(const std::string& where, const Tensor& input, const Tensor& target, const ClassCriterionFields& f,
                Tensor& gradInput);

 private:
  std::unique_ptr<NLLPlan> plan_;
};
}  // namespace detail

// The input and spatial dims are the nn criterion's (nn::ClassCriterion's constants).
template <std::derived_from<nn::ClassCriterionBase> Base>
class ClassCriterionBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  double updateOutput(const tensor::Tensor& input, const tensor::Tensor& target) override {
    this->output = compute_.loss(this->where("updateOutput"), input, target, fields());
    return this->output;
  }

  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& target) override {
    compute_.gradient(this->where("updateGradInput"), input, target, fields(), this->gradInput);
    return this->gradInput;
  }

  // updateOutput's loss left on the device: a 0-dim float64 tensor, the same one every call (so a
  // CUDA graph may capture the call and read it after each replay), with updateOutput's double and
  // no host read; `output` is not set, and targets out of range are not reported (they count
  // nothing, as in the gradient).
  const tensor::Tensor& lossOnDevice(const tensor::Tensor& input, const tensor::Tensor& target) {
    compute_.lossOnDevice(this->where("lossOnDevice"), input, target, fields(), deviceLoss_);
    return deviceLoss_;
  }

 private:
  detail::ClassCriterionFields fields() {
    Tensor* logProbs = this->classInput() == nn::ClassInput::Scores ? &this->logProbs : nullptr;
    return {this->weights, this->sizeAverage, this->ignoreIndex, this->spatialDims(), logProbs};
  }

  detail::ClassCriterionCompute compute_;
  tensor::Tensor deviceLoss_;
};

}  // namespace cudnn
