// TemporalConvolution.cpp: the temporal convolution as a 2-d cuDNN cross-correlation.
//
// Note [Temporal convolution as a 2-d one]
// Output frame t is bias + W * (input frames t*dW .. t*dW + kW - 1, concatenated), with W in
// Torch's layout [outputFrameSize x (kW * inputFrameSize)], kW-major. Read as NCHW, the input
// [batch x nInputFrame x inputFrameSize] already IS an image [batch x 1 x nInputFrame x
// inputFrameSize] and W already IS a filter [outputFrameSize x 1 x kW x inputFrameSize]: the
// cross-correlation with stride (dW, 1) and no padding, its kernel as wide as the image, gives
// [batch x outputFrameSize x nOutputFrame x 1], exactly the module's sums. So input,
// gradInput, weight and gradWeight reach cuDNN as views, never copied; only the output side is
// transposed between cuDNN's [batch x outputFrameSize x nOutputFrame] and nn's [batch x
// nOutputFrame x outputFrameSize]: one copy kernel on the output in forward, one on gradOutput
// in backward (backward() shares it between gradInput and the parameter gradients), into
// buffers the module keeps, so steady state allocates nothing. Frames as channels instead
// ([batch x inputFrameSize x nInputFrame x 1]) would need the input and the weight transposed.
#include "cudnn/TemporalConvolution.h"

#include "cudnn/ops/conv.h"
#include "nn/Buffers.h"

namespace cudnn {

namespace {

struct Frames {
  int64_t batch, in, out;
};

Frames frames_of(const Shape& input, const Shape& output) {
  const bool batched = input.size() == 3;
  return {batched ? input[0] : 1, input[input.size() - 2], output[output.size() - 2]};
}

}  // namespace

const Tensor& TemporalConvolution::updateOutput(const Tensor& input) {
  const char* method = "updateOutput";
  detail::check_conv_input(*this, method, input, weight);
  const Shape outShape = outputSizes(input.sizes(), method);
  const Frames f = frames_of(input.sizes(), outShape);
  const Tensor x = input.contiguous().view({f.batch, 1, f.in, inputFrameSize});
  nn::ensure(output, outShape, x);
  if (output.numel() == 0) return output;  // an empty batch
  nn::ensure(convOutput_, {f.batch, outputFrameSize, f.out, 1}, x);
  const Tensor w = weight.contiguous().view({outputFrameSize, 1, kW, inputFrameSize});
  plan_.sync(*this, algo, method);
  detail::with_where(*this, method, [&] {
    plan_->forward(x, w, convOutput_, spec());
    plan_->add_bias(convOutput_, bias);
  });
  output.view({f.batch, f.out, outputFrameSize})
      .copy_(convOutput_.view({f.batch, outputFrameSize, f.out}).transpose(1, 2));
  return output;
}

void TemporalConvolution::transposeGradOutput(const Tensor& gradOutput) {
  const Tensor gy = gradOutput.dim() == 3 ? gradOutput : gradOutput.unsqueeze(0);  // [batch x frames x size]
  const int64_t batch = gy.size(0), frames = gy.size(1);
  nn::ensure(convGradOutput_, {batch, outputFrameSize, frames, 1}, gy);
  convGradOutput_.view({batch, outputFrameSize, frames}).copy_(gy.transpose(1, 2));
}

const Tensor& TemporalConvolution::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const char* method = "updateGradInput";
  detail::check_conv_input(*this, method, input, weight);
  detail::check_conv_grad(*this, method, gradOutput, weight);
  checkGradOutputSizes(input.sizes(), gradOutput.sizes(), method);
  const Frames f = frames_of(input.sizes(), gradOutput.sizes());
  nn::ensure(gradInput, input.sizes(), gradOutput);
  if (gradInput.numel() == 0) return gradInput;
  transposeGradOutput(gradOutput);
  const Tensor w = weight.contiguous().view({outputFrameSize, 1, kW, inputFrameSize});
  const Tensor dx = gradInput.view({f.batch, 1, f.in, inputFrameSize});
  plan_.sync(*this, algo, method);
  detail::with_where(*this, method, [&] { plan_->backward_data(w, convGradOutput_, dx, spec()); });
  return gradInput;
}

void TemporalConvolution::accumulate(const Tensor& input, double scale, const char* method) {
  checkGradients(method);
  const int64_t batch = convGradOutput_.size(0), frames = input.size(-2);
  const Tensor x = input.contiguous().view({batch, 1, frames, inputFrameSize});
  Tensor gw = gradWeight.contiguous();
  Tensor gb = gradBias.contiguous();
  plan_.sync(*this, algo, method);
  detail::with_where(*this, method, [&] {
    plan_->backward_filter(x, convGradOutput_, gw.view({outputFrameSize, 1, kW, inputFrameSize}), spec(), scale, 1);
    plan_->backward_bias(convGradOutput_, gb, scale, 1);
  });
  if (!gw.is_same_view(gradWeight)) gradWeight.copy_(gw);
  if (!gb.is_same_view(gradBias)) gradBias.copy_(gb);
}

void TemporalConvolution::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const char* method = "accGradParameters";
  detail::check_conv_input(*this, method, input, weight);
  detail::check_conv_grad(*this, method, gradOutput, weight);
  checkGradOutputSizes(input.sizes(), gradOutput.sizes(), method);
  if (input.numel() == 0) return;
  transposeGradOutput(gradOutput);
  accumulate(input, scale, method);
}

void TemporalConvolution::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  updateGradInput(input, gradOutput);  // checks, and leaves gradOutput transposed in convGradOutput_
  if (input.numel() == 0) return;
  accumulate(input, scale, "accGradParameters");
}

}  // namespace cudnn
