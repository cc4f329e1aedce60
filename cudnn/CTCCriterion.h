// CTCCriterion.h: cudnn.CTCCriterion, nn::CTCCriterion on CUDA tensors (its lengths, targets,
// reductions and zeroInfinity): cuDNN's CTC (cudnnCTCLoss_v8, deterministic; cudnn/ops/ctc.h)
// where it applies, else nn's float64 reference on the host, see Note [When the twin calls
// cuDNN's CTC]. The targets and lengths are read to the host on every pass (the checks and
// cuDNN's label lists need them); the loss costs one host read more.
#pragma once

#include <vector>

#include "cudnn/Twin.h"
#include "nn/CTCCriterion.h"

namespace cudnn {

class CTCCriterion : public Twin<nn::CTCCriterion> {
 public:
  using Twin::Twin;

  double updateOutput(const tensor::Tensor& input, const tensor::Tensor& target) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& target) override;

 private:
  // Each sample's loss (before zeroInfinity); with grad, gradInput = the reduction's gradient.
  std::vector<double> compute(const tensor::Tensor& input, const nn::kernels::CTCProblem& p, bool grad);
  bool cudnnApplies(const tensor::Tensor& input, const nn::kernels::CTCProblem& p) const;
};

}  // namespace cudnn
