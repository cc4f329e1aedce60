// CTCCriterion.h: the connectionist temporal classification loss, PyTorch's F.ctc_loss: input of
// log-probabilities [T x N x C] (a LogSoftMax over C: time, batch, classes), targets of labels in
// [0, C) other than blank, either padded [N x S] (row b's first targetLengths[b] entries) or
// concatenated 1-d (sum of targetLengths); each sample's input length (<= T) and target length
// (integer tensors [N], any device). loss_b = -log p(targets_b | input_b), +Inf where no
// alignment exists; zeroInfinity makes those 0 (and their gradient 0). Reduction: Mean (each
// loss divided by its target length, at least 1, then the batch mean; PyTorch's default), Sum,
// or None: `losses` [N] (float64, on the input's device) holds every sample's loss after
// zeroInfinity; forward returns their sum, and backward the sum's gradient.
// The lengths: forward(logProbs, targets, inputLengths, targetLengths) (and the same backward)
// sets the fields inputLengths and targetLengths and runs the criterion; the plain
// forward(input, target) uses the fields as they are: undefined means every input length T and,
// for padded targets, every target length S. The gradient is PyTorch's, with respect to the
// logits behind the log-softmax (Note [CTC's gradient] in nn/kernels/CTC.cpp).
// Targets and lengths are checked (errors name the criterion, the shapes and the first bad
// value); targets equal to blank are refused, as PyTorch's documentation says.
// Twin: cudnn::CTCCriterion (cuDNN's CTC where it applies, Note [When the twin calls cuDNN's CTC]).
#pragma once

#include <string>
#include <string_view>

#include "nn/Criterion.h"
#include "nn/kernels/CTC.h"

namespace nn {

class CTCCriterion : public Criterion {
 public:
  enum class Reduction { None, Sum, Mean };

  explicit CTCCriterion(int64_t blank = 0, Reduction reduction = Reduction::Mean, bool zeroInfinity = false)
      : blank(blank), reduction(reduction), zeroInfinity(zeroInfinity) {}

  using Criterion::backward;
  using Criterion::forward;
  double forward(const Tensor& logProbs, const Tensor& targets, const Tensor& inputLengths,
                 const Tensor& targetLengths);
  const Tensor& backward(const Tensor& logProbs, const Tensor& targets, const Tensor& inputLengths,
                         const Tensor& targetLengths);
  // The lengths the plain forward(input, target) and backward use (undefined: full lengths).
  void setLengths(Tensor inputLengths, Tensor targetLengths);

  double updateOutput(const Tensor& input, const Tensor& target) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& target) override;
  static constexpr std::string_view kTypeName = "nn.CTCCriterion";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;

  int64_t blank;
  Reduction reduction;
  bool zeroInfinity;
  Tensor inputLengths, targetLengths;  // integer [N], or undefined
  Tensor losses;                       // [N] float64: each sample's loss of the last forward

 protected:
  // Checks input, target and lengths against each other and reads targets and lengths to the host.
  kernels::CTCProblem checkedProblem(const Tensor& input, const Tensor& target, const char* method) const;
  // The reduction of per-sample losses (zeroInfinity applied to them in place) and each
  // sample's factor in the gradient.
  double reduce(const kernels::CTCProblem& p, std::vector<double>& perSample) const;
  std::vector<double> gradScales(const kernels::CTCProblem& p) const;
};

}  // namespace nn
