// SpatialPaddingBase.h: the shared base of the spatial padding twins (cudnn::SpatialZeroPadding,
// SpatialReflectionPadding, SpatialReplicationPadding): the nn base's shapes and checks, the
// compute on cudnn/kernels/Padding.cu (the index arithmetic nn's, a deterministic gather
// backward). float32, float64, float16 and bfloat16; input and gradOutput of any strides are
// read in place, and a channels-last input gives channels-last output and gradInput (Note
// [Channels-last twins] in cudnn/core/Layout.h).
#pragma once

#include <concepts>

#include "cudnn/Twin.h"
#include "nn/SpatialPaddingBase.h"

namespace cudnn {

namespace detail {
// m.output = the padded input; m.gradInput = the gathered gradOutput. The twin checks the devices first.
const tensor::Tensor& spatial_padding_forward(nn::SpatialPaddingBase& m, const tensor::Tensor& input);
const tensor::Tensor& spatial_padding_backward(nn::SpatialPaddingBase& m, const tensor::Tensor& input,
                                               const tensor::Tensor& gradOutput);
}  // namespace detail

template <std::derived_from<nn::SpatialPaddingBase> Base>
class SpatialPaddingBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override {
    this->checkCudaInput("updateOutput", input);
    return detail::spatial_padding_forward(*this, input);
  }
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override {
    this->checkCudaGrad("updateGradInput", input, gradOutput);
    return detail::spatial_padding_backward(*this, input, gradOutput);
  }
};

}  // namespace cudnn
