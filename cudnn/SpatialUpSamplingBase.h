// SpatialUpSamplingBase.h: the shared base of the up-sampling twins
// (cudnn::SpatialUpSamplingNearest, SpatialUpSamplingBilinear): the nn base's shapes and
// checks, the compute on cudnn/kernels/UpSampling.cu (the index arithmetic nn's, a
// deterministic gather backward). float32, float64, float16 and bfloat16; input and gradOutput
// of any strides are read in place, and a channels-last input gives channels-last output and
// gradInput (Note [Channels-last twins] in cudnn/core/Layout.h).
#pragma once

#include <concepts>

#include "cudnn/Twin.h"
#include "nn/SpatialUpSamplingBase.h"

namespace cudnn {

namespace detail {
// m.output = the resampled input; m.gradInput = the gathered gradOutput. The twin checks the devices first.
const tensor::Tensor& upsampling_forward(nn::SpatialUpSamplingBase& m, const tensor::Tensor& input);
const tensor::Tensor& upsampling_backward(nn::SpatialUpSamplingBase& m, const tensor::Tensor& input,
                                          const tensor::Tensor& gradOutput);
}  // namespace detail

template <std::derived_from<nn::SpatialUpSamplingBase> Base>
class SpatialUpSamplingBase : public Twin<Base> {
 public:
  using Twin<Base>::Twin;

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override {
    this->checkCudaInput("updateOutput", input);
    return detail::upsampling_forward(*this, input);
  }
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override {
    this->checkCudaGrad("updateGradInput", input, gradOutput);
    return detail::upsampling_backward(*this, input, gradOutput);
  }
};

}  // namespace cudnn
