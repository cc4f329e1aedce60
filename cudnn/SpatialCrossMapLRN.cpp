// SpatialCrossMapLRN.cpp
#include "cudnn/SpatialCrossMapLRN.h"

#include "cudnn/core/Opaque.h"
#include "cudnn/ops/lrn.h"
#include "nn/Buffers.h"

template class cudnn::detail::Opaque<cudnn::LRNPlan>;

namespace cudnn {

namespace {
// cuDNN wants [N x C x H x W]: a [C x H x W] tensor is viewed as a batch of one.
Tensor batched(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }
}  // namespace

int SpatialCrossMapLRN::checkedSize(const std::string& where) const {
  check_lrn_arguments(where, size, beta, k);
  return static_cast<int>(size);
}

const Tensor& SpatialCrossMapLRN::updateOutput(const Tensor& input) {
  const std::string where = checkCudaInput("updateOutput", input);
  checkShape(input, "updateOutput");
  const int n = checkedSize(where);
  scale = Tensor();
  const Tensor x = input.contiguous();
  nn::ensure(output, x.sizes(), x);
  if (x.numel() > 0) plan_->forward(n, alpha, beta, k, batched(x), batched(output));
  return output;
}

const Tensor& SpatialCrossMapLRN::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const std::string where = checkCudaGrad("updateGradInput", input, gradOutput);
  checkShape(input, "updateGradInput");
  checkGradOutput(input, gradOutput, "updateGradInput");
  const int n = checkedSize(where);
  // the backward reads x alone (Note [LRN backward] in cudnn/kernels/LRN.cu)
  const Tensor x = input.contiguous();
  const Tensor dy = gradOutput.contiguous();
  nn::ensure(gradInput, x.sizes(), x);
  if (x.numel() > 0) plan_->backward(n, alpha, beta, k, batched(x), batched(dy), batched(gradInput));
  return gradInput;
}

}  // namespace cudnn
