// SpatialPaddingBase.cpp
#include "cudnn/SpatialPaddingBase.h"

#include "cudnn/core/Layout.h"
#include "cudnn/kernels/Padding.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

const tensor::Tensor& spatial_padding_forward(nn::SpatialPaddingBase& m, const tensor::Tensor& input) {
  const tensor::Shape shape = m.outputShape(input, "updateOutput");
  nn::ensure(m.output, shape, input, activation_format(input));
  kernels::spatial_pad_forward(input, m.output, m.mode(), {m.pad_l, m.pad_r, m.pad_t, m.pad_b});
  return m.output;
}

const tensor::Tensor& spatial_padding_backward(nn::SpatialPaddingBase& m, const tensor::Tensor& input,
                                               const tensor::Tensor& gradOutput) {
  m.checkGradOutput(input, gradOutput, "updateGradInput");
  nn::ensure(m.gradInput, input.sizes(), input, activation_format(input));
  kernels::spatial_pad_backward(gradOutput, m.gradInput, m.mode(), {m.pad_l, m.pad_r, m.pad_t, m.pad_b});
  return m.gradInput;
}

}  // namespace cudnn::detail
