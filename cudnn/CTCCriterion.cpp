// CTCCriterion.cpp
#include "cudnn/CTCCriterion.h"

#include <cmath>
#include <limits>

#include "cudnn/ops/ctc.h"
#include "nn/Buffers.h"

namespace cudnn {

// Note [When the twin calls cuDNN's CTC]
// cuDNN's CTC takes float32 data, blank 0, labels of at most 255 (PyTorch's bound: longer ones
// fault in cuDNN), and for a sample with no alignment (T_b < L_b + repeats) its gradient mode
// gives a zero gradient where PyTorch (and nn) give NaN. So the twin calls cuDNN when the input
// is float32, blank is 0, the batch is not empty and every sample has 1 <= T_b, 1 <= L_b <= 255
// and an alignment. (An empty label sequence, L_b = 0, costs -sum_t log p_t(blank); cuDNN 9
// gives it cost 0, seen on an H200, so such a batch goes to the fallback.) Its costs are read
// (the loss needs them) and any non-finite one (a NaN or Inf in the input) sends the call to the
// fallback too, so NaN and Inf come out as nn's. Everything else (float64, float16, bfloat16,
// another blank, empty or long labels, impossible alignments) is computed by nn's reference
// (nn/kernels/CTC.h, float64) on a host copy, the gradient copied back in the input's dtype:
// correct everywhere, fast where cuDNN serves. cuDNN's gradient is the cost's with
// respect to its softmax's input, which for log-probabilities is PyTorch's (Note [CTC's
// gradient] in nn/kernels/CTC.cpp); the twin scales it per sample for the reduction and zeroes the
// steps past each input length.

bool CTCCriterion::cudnnApplies(const Tensor& input, const nn::kernels::CTCProblem& p) const {
  constexpr int64_t kMaxLabels = 255;
  if (input.dtype() != DType::Float32 || p.blank != 0 || p.N == 0 || p.T == 0) return false;
  for (int64_t b = 0; b < p.N; ++b) {
    // L_b = 0: cuDNN's cost is 0, not -sum_t log p_t(blank) (the Note)
    if (p.inputLengths[b] < 1 || p.targetLengths[b] < 1 || p.targetLengths[b] > kMaxLabels || !p.feasible(b))
      return false;
  }
  return true;
}

std::vector<double> CTCCriterion::compute(const Tensor& input, const nn::kernels::CTCProblem& p, bool grad) {
  std::vector<double> perSample;
  const std::vector<double> scale = gradScales(p);
  if (cudnnApplies(input, p)) {
    const Tensor x = input.contiguous();
    std::vector<int> labels, labelLengths, inputLengths;
    for (int64_t b = 0; b < p.N; ++b) {
      for (int64_t i = 0; i < p.targetLengths[b]; ++i) labels.push_back(static_cast<int>(p.targets[p.offsets[b] + i]));
      labelLengths.push_back(static_cast<int>(p.targetLengths[b]));
      inputLengths.push_back(static_cast<int>(p.inputLengths[b]));
    }
    const Tensor costs = tensor::empty({p.N}, DType::Float32, x.device());
    const Tensor grads = tensor::empty(x.sizes(), DType::Float32, x.device());
    ctc_loss(x, labels, labelLengths, inputLengths, costs, grads);
    perSample = costs.cpu().to_vector<double>();  // the one host read
    bool finite = true;
    for (double c : perSample) finite = finite && std::isfinite(c);
    if (finite) {
      if (grad) {
        const Tensor s = tensor::from_vector<double>(scale, {1, p.N, 1}).to(x.device(), DType::Float32);
        nn::ensure(gradInput, input.sizes(), x);
        gradInput.copy_(grads.mul(s));
        for (int64_t b = 0; b < p.N; ++b) {
          if (p.inputLengths[b] < p.T)
            gradInput.narrow(0, p.inputLengths[b], p.T - p.inputLengths[b]).select(1, b).zero_();
        }
      }
      return perSample;
    }
  }
  const Tensor lp = input.to(tensor::Device::cpu(), DType::Float64).contiguous();
  Tensor g;
  if (grad) g = tensor::empty(input.sizes(), DType::Float64);
  nn::kernels::ctc_loss(p, lp, perSample, grad ? &scale : nullptr, zeroInfinity, grad ? &g : nullptr);
  if (grad) nn::ensure(gradInput, input.sizes(), input.dtype(), input.device()).copy_(g);
  return perSample;
}

double CTCCriterion::updateOutput(const Tensor& input, const Tensor& target) {
  checkCudaInput("updateOutput", input);
  const nn::kernels::CTCProblem p = checkedProblem(input, target, "updateOutput");
  std::vector<double> perSample = compute(input, p, false);
  output = reduce(p, perSample);
  losses = tensor::from_vector<double>(perSample, {p.N}).to(input.device());
  return output;
}

const Tensor& CTCCriterion::updateGradInput(const Tensor& input, const Tensor& target) {
  checkCudaInput("updateGradInput", input);
  const nn::kernels::CTCProblem p = checkedProblem(input, target, "updateGradInput");
  compute(input, p, true);
  return gradInput;
}

}  // namespace cudnn
