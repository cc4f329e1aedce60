// ReductionBase.h: the shared base of the reduction twins (cudnn::Sum, Mean, Max, Min) over
// nn::ReductionBase's configuration and checks: the same [outer x n x inner] passes on our
// kernels (cudnn/kernels/Reduce.h, not installed: detail::reduction_* are defined in
// ReductionBase.cpp, Note [Sealed headers]). Any rank, float32, float64, float16 and
// bfloat16; Max's and Min's indices live on the input's device.
#pragma once

#include <concepts>

#include "cudnn/Twin.h"
#include "nn/ReductionBase.h"

namespace cudnn {

namespace detail {
// The twins' compute over nn::ReductionBase's fields (output, gradInput, indices); the twin
// checks first.
void reduction_forward(nn::ReductionBase& m, const Tensor& input, const nn::ReductionBase::Layout& l);
void reduction_backward(nn::ReductionBase& m, const Tensor& input, const Tensor& gradOutput,
                        const nn::ReductionBase::Layout& l);
}  // namespace detail

template <std::derived_from<nn::ReductionBase> Base>
class ReductionBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  const Tensor& updateOutput(const Tensor& input) override {
    this->checkCudaInput("updateOutput", input);
    const nn::ReductionBase::Layout l = this->checkInput(input, "updateOutput", false);
    detail::reduction_forward(*this, input, l);
    return this->output;
  }

  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    this->checkCudaGrad("updateGradInput", input, gradOutput);
    const nn::ReductionBase::Layout l = this->checkInput(input, "updateGradInput", false);
    this->checkGradOutput(l, input, gradOutput, "updateGradInput");
    detail::reduction_backward(*this, input, gradOutput, l);
    return this->gradInput;
  }
};

}  // namespace cudnn
