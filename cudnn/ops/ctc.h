// ctc.h: cuDNN's CTC loss (cudnnCTCLoss_v8, CUDNN_CTC_LOSS_ALGO_DETERMINISTIC), the op behind
// cudnn::CTCCriterion. Its input is float32 [T x N x C] and cuDNN applies a softmax over C to it
// first (CUDNN_LOSS_NORMALIZATION_SOFTMAX): given log-probabilities, softmax(lp) = exp(lp), so the
// costs are the CTC losses of lp and the gradients are those of each cost with respect to lp taken
// as logits, PyTorch's (Note [CTC's gradient] in nn/kernels/CTC.cpp). Labels: concatenated, 1..C-1
// (blank is 0 for cuDNN), each sequence at most 255 long.
#pragma once

#include <vector>

#include "tensor/Tensor.h"

namespace cudnn {

// costs: float32 [N], grads: float32 [T x N x C] (contiguous, on x's device), both overwritten.
void ctc_loss(const tensor::Tensor& x, const std::vector<int>& labels, const std::vector<int>& labelLengths,
              const std::vector<int>& inputLengths, const tensor::Tensor& costs, const tensor::Tensor& grads);

}  // namespace cudnn
