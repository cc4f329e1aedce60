// ClassNLL.h: the GPU kernels behind the cudnn criteria (ClassNLL, CrossEntropy and the
// spatial/volumetric cross entropies): negative log-likelihood over log-probabilities
// logp [N x C x inner] (inner = 1 for [N x C]) and Int64 targets [N x inner], with optional
// class weights [C] and an ignored class. The reduction runs in one block in a fixed order,
// so the loss is deterministic. Targets out of range are reported with their position.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

struct NLLSums {
  double loss = 0;    // sum over samples of -w[t] * logp[n, t, i]
  double weight = 0;  // sum over samples of w[t] (the sizeAverage divisor)
};

// Throws tensor::Error "<where>target <value> at <position> is out of range [0, C)" for a bad target.
NLLSums nll_forward(const tensor::Tensor& logp, const tensor::Tensor& target, const tensor::Tensor& weights,
                    int64_t ignore_index, const std::string& where);
// dlogp = 0 except dlogp[n, t, i] = -w[t] * scale.
void nll_backward(const tensor::Tensor& target, const tensor::Tensor& weights, int64_t ignore_index, double scale,
                  const tensor::Tensor& dlogp);

}  // namespace cudnn::kernels
