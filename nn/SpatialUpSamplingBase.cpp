// SpatialUpSamplingBase.cpp
#include "nn/SpatialUpSamplingBase.h"

#include "nn/Buffers.h"

namespace nn {

Shape SpatialUpSamplingBase::outputShape(const Tensor& input, const char* method) const {
  if (!input.defined()) throw Error(where(method) + "input is undefined");
  if (input.dim() != 3 && input.dim() != 4) {
    throw Error(where(method) + "expected 3D [C x H x W] or 4D [N x C x H x W] input, got " +
                tensor::shape_str(input.sizes()));
  }
  const int64_t h = input.size(-2), w = input.size(-1);
  Shape out = input.sizes();
  if (h < 1 || w < 1) {
    throw Error(where(method) + "expected planes of at least 1 x 1, got input " + tensor::shape_str(input.sizes()));
  }
  const auto [oh, ow] = outputSize(h, w);
  out[out.size() - 2] = oh;
  out[out.size() - 1] = ow;
  if (oh < 1 || ow < 1) {
    throw Error(where(method) + "expected an output of at least 1 x 1, got input " + tensor::shape_str(input.sizes()) +
                " and output " + tensor::shape_str(out));
  }
  return out;
}

void SpatialUpSamplingBase::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  const Shape expected = outputShape(input, method);
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where(method) + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (input " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("undefined")));
  }
  check_matches(where(method), gradOutput, input, "gradOutput", "input");
}

const Tensor& SpatialUpSamplingBase::updateOutput(const Tensor& input) {
  check_float(where("updateOutput"), input);
  ensure(output, outputShape(input, "updateOutput"), input);
  if (output.numel() > 0) kernels::upsample_forward(input, output, resampling());
  return output;
}

const Tensor& SpatialUpSamplingBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_float(where("updateGradInput"), input);
  checkGradOutput(input, gradOutput, "updateGradInput");
  ensure(gradInput, input.sizes(), input);
  if (gradInput.numel() > 0) kernels::upsample_backward(gradOutput, gradInput, resampling());
  return gradInput;
}

}  // namespace nn
