// CTC.h: the connectionist temporal classification loss on the CPU (nn::CTCCriterion, and the
// cudnn twin's fallback): the alpha-beta recursion in log space over the extended label
// sequence (blanks between and around the labels), in float64, and the gradient PyTorch's
// ctc_loss computes, with respect to the log-probabilities' logits (see Note [CTC's gradient]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/Tensor.h"

namespace nn::kernels {

// One call's problem, on the host: log-probabilities [T x N x C], blank, each sample's input
// length (<= T) and labels (targets[offsets[b] ..][0 .. targetLengths[b]), checked).
struct CTCProblem {
  int64_t T = 0, N = 0, C = 0, blank = 0;
  std::vector<int64_t> inputLengths, targetLengths, offsets, targets;
  int64_t maxTargetLength() const;
  // Whether sample b has any alignment: T_b >= L_b + (the repeats of neighbouring labels).
  bool feasible(int64_t b) const;
};

// losses[b] = -log p(labels_b | input_b) (+Inf where no alignment exists). With grad (float64
// [T x N x C], contiguous, overwritten), the gradient of sum_b scale[b] * loss_b: for t < T_b,
// exp(lp) - exp(log(sum over s with label c of alpha_t(s) beta_t(s)) + loss_b - lp), times
// scale[b]; 0 for t >= T_b, and 0 for a sample of infinite loss under zeroInfinity (its loss
// stays +Inf here: the criterion's reduction zeroes it).
// logProbs: contiguous float64 [T x N x C] on the CPU.
void ctc_loss(const CTCProblem& p, const tensor::Tensor& logProbs, std::vector<double>& losses,
              const std::vector<double>* scale, bool zeroInfinity, tensor::Tensor* grad);

}  // namespace nn::kernels
