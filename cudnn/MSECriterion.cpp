// MSECriterion.cpp
#include "cudnn/MSECriterion.h"

#include "cudnn/core/Descriptors.h"
#include "nn/Buffers.h"

namespace cudnn {

Tensor MSECriterion::checked(const Tensor& input, const Tensor& target, const char* method) const {
  const std::string w = where(method);
  check_cuda(w, input, "input");
  nn::check_matches(w, target, input, "target", "input");
  checkSizes(input, target, method);
  return target.reshape(input.sizes());
}

double MSECriterion::updateOutput(const Tensor& input, const Tensor& target) {
  const Tensor t = checked(input, target, "updateOutput");
  const int64_t n = input.numel();
  const Tensor diff = input.to(DType::Float64).sub(t.to(DType::Float64));
  const double sum = diff.square().sum().item();  // the one host read
  output = sizeAverage && n > 0 ? sum / static_cast<double>(n) : sum;
  return output;
}

const Tensor& MSECriterion::updateGradInput(const Tensor& input, const Tensor& target) {
  const Tensor t = checked(input, target, "updateGradInput");
  const int64_t n = input.numel();
  nn::ensure(gradInput, input.sizes(), input).copy_(input);
  gradInput.sub_(t).mul_(2.0 / (sizeAverage && n > 0 ? static_cast<double>(n) : 1.0));
  return gradInput;
}

}  // namespace cudnn

