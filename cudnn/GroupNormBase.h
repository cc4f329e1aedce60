// GroupNormBase.h: the twins of nn::GroupNorm and nn::InstanceNorm (cudnn::GroupNorm,
// cudnn::InstanceNorm: one alias each), on our kernels (cudnn/kernels/GroupNorm.h): one block a
// (sample, group) for the statistics and the input gradient, element-wise passes for the
// affine apply, fixed-order sums for the parameter gradients (the same bits from run to run).
// Under groupnorm.engine=cudnn the normalisation and the input gradient run as cuDNN's layer
// norm over a group a row where it takes the problem, the per-channel parts on our kernels
// (cudnn/ops/group_norm.h).
// Same constructors, parameters, buffers and printing as nn's; float32, float64, float16 and
// bfloat16 input of the parameters' (or the running statistics') dtype on CUDA devices (to()
// converts them, as PyTorch's .half()); saveMean and saveRstd are filled as nn's, in float32
// for 16-bit input. A non-contiguous input is read through a contiguous copy; output and
// gradInput are contiguous.
#pragma once

#include <concepts>

#include "cudnn/Twin.h"
#include "nn/GroupNormBase.h"

namespace cudnn {

namespace detail {
// What groupnorm.engine=cudnn keeps between calls, float32 [cols] (grown, never shrunk: a
// prefix serves a shorter row): the layer norm's unit scale and zero bias, and the scratch its
// backward writes its per-column parameter gradients to.
struct GroupNormScratch {
  Tensor ones, zeros, dscale, dbias;
};
// The compute of the group-normalisation twins over nn::GroupNormBase's fields (cudnn/GroupNormBase.cpp).
void group_norm_forward(nn::GroupNormBase& m, const Tensor& input, GroupNormScratch& scratch);
// updateGradInput (wantGradInput) and/or accGradParameters (wantParams, times scale).
void group_norm_backward(nn::GroupNormBase& m, const Tensor& input, const Tensor& gradOutput, bool wantGradInput,
                         bool wantParams, double scale, const char* method, GroupNormScratch& scratch);
}  // namespace detail

template <std::derived_from<nn::GroupNormBase> Base>
class GroupNormBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  const Tensor& updateOutput(const Tensor& input) override {
    detail::group_norm_forward(*this, input, scratch_);
    return this->output;
  }
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    detail::group_norm_backward(*this, input, gradOutput, true, false, 1.0, "updateGradInput", scratch_);
    return this->gradInput;
  }
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override {
    detail::group_norm_backward(*this, input, gradOutput, false, true, scale, "accGradParameters", scratch_);
  }

 private:
  detail::GroupNormScratch scratch_;
};

}  // namespace cudnn
