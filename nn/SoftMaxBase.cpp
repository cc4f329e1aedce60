// SoftMaxBase.cpp: shape rules, buffers, and dispatch to kernels::softmax_*.
#include "nn/SoftMaxBase.h"

#include "nn/Buffers.h"
#include "nn/kernels/SoftMax.h"

namespace nn {

SoftMaxBase::Layout SoftMaxBase::layout(const Tensor& input, const char* method) const {
  check_float(where(method), input);
  return shapeLayout(input.sizes(), method);
}

SoftMaxBase::Layout SoftMaxBase::shapeLayout(const Shape& s, const char* method) const {
  const int64_t d = static_cast<int64_t>(s.size());
  auto spatial = [&](int64_t from) {
    int64_t n = 1;
    for (int64_t k = from; k < d; ++k) n *= s[k];
    return n;
  };
  switch (family_) {
    case Family::Instance:
      // Torch's nn.SoftMax: over the vector, each row, or the feature maps at each location
      if (d == 1) return {1, s[0], 1};
      if (d == 2) return {s[0], s[1], 1};
      if (d == 3) return {1, s[0], spatial(1)};
      if (d == 4) return {s[0], s[1], spatial(2)};
      throw Error(where(method) + "expected input of [n], [batch x n], [C x H x W] or [N x C x H x W], got " +
                  tensor::shape_str(s));
    case Family::Spatial:
      if (d == 3) return {1, s[0], spatial(1)};
      if (d == 4) return {s[0], s[1], spatial(2)};
      throw Error(where(method) + "expected input of [C x H x W] or [N x C x H x W], got " + tensor::shape_str(s));
    case Family::Volumetric:
      if (d == 4) return {1, s[0], spatial(1)};
      if (d == 5) return {s[0], s[1], spatial(2)};
      throw Error(where(method) + "expected input of [C x T x H x W] or [N x C x T x H x W], got " +
                  tensor::shape_str(s));
  }
  throw Error(where(method) + "invalid softmax family");
}

void SoftMaxBase::checkBackward(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  if (!output.defined() || output.sizes() != input.sizes() || output.dtype() != input.dtype()) {
    throw Error(where(method) + "no output for input " + input.description() + ": call updateOutput first");
  }
  if (gradOutput.sizes() != input.sizes() || gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of the input's shape and dtype (" + input.description() +
                "), got " + gradOutput.description());
  }
}

const Tensor& SoftMaxBase::updateOutput(const Tensor& input) {
  const Layout l = layout(input, "updateOutput");
  const Tensor x = input.contiguous();
  ensure(output, x.sizes(), x);
  tensor::dispatch_f32_f64(x.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::softmax_forward<T>(x.data<T>(), output.data<T>(), l.outer, l.channels, l.inner, log_);
  });
  return output;
}

const Tensor& SoftMaxBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Layout l = layout(input, "updateGradInput");
  check_float(where("updateGradInput"), gradOutput, "gradOutput");
  checkBackward(input, gradOutput, "updateGradInput");
  const Tensor gy = gradOutput.contiguous();
  ensure(gradInput, gy.sizes(), gy);
  tensor::dispatch_f32_f64(gy.dtype(), type_name().c_str(), [&](auto tag) {
    using T = decltype(tag);
    kernels::softmax_backward<T>(output.data<T>(), gy.data<T>(), gradInput.data<T>(), l.outer, l.channels, l.inner,
                                 log_);
  });
  return gradInput;
}

tensor::Json SoftMaxBase::config() const {
  tensor::Json c(tensor::Json::Object{});
  if (fast) c.set("fast", tensor::Json(true));
  return c;
}

}  // namespace nn
