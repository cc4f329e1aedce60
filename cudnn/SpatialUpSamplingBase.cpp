// SpatialUpSamplingBase.cpp
#include "cudnn/SpatialUpSamplingBase.h"

#include "cudnn/core/Layout.h"
#include "cudnn/kernels/UpSampling.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

const tensor::Tensor& upsampling_forward(nn::SpatialUpSamplingBase& m, const tensor::Tensor& input) {
  const tensor::Shape shape = m.outputShape(input, "updateOutput");
  nn::ensure(m.output, shape, input, activation_format(input));
  kernels::upsample_forward(input, m.output, m.resampling());
  return m.output;
}

const tensor::Tensor& upsampling_backward(nn::SpatialUpSamplingBase& m, const tensor::Tensor& input,
                                          const tensor::Tensor& gradOutput) {
  m.checkGradOutput(input, gradOutput, "updateGradInput");
  nn::ensure(m.gradInput, input.sizes(), input, activation_format(input));
  kernels::upsample_backward(gradOutput, m.gradInput, m.resampling());
  return m.gradInput;
}

}  // namespace cudnn::detail
