// SpatialPaddingBase.cpp
#include "nn/SpatialPaddingBase.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Padding.h"

namespace nn {

SpatialPaddingBase::SpatialPaddingBase(kernels::PadMode mode, int64_t l, int64_t r, int64_t t, int64_t b)
    : pad_l(l), pad_r(r), pad_t(t), pad_b(b), mode_(mode) {}

Shape SpatialPaddingBase::outputShape(const Tensor& input, const char* method) const {
  if (!input.defined()) throw Error(where(method) + "input is undefined");
  if (input.dim() != 3 && input.dim() != 4) {
    throw Error(where(method) + "expected 3D [C x H x W] or 4D [N x C x H x W] input, got " +
                tensor::shape_str(input.sizes()));
  }
  const int64_t h = input.size(-2), w = input.size(-1);
  if (mode_ == kernels::PadMode::Reflect && (pad_l >= w || pad_r >= w || pad_t >= h || pad_b >= h || -pad_l >= w ||
                                             -pad_r >= w || -pad_t >= h || -pad_b >= h)) {
    throw Error(where(method) + "expected pads (l=" + std::to_string(pad_l) + ", r=" + std::to_string(pad_r) +
                ", t=" + std::to_string(pad_t) + ", b=" + std::to_string(pad_b) +
                ") smaller than the input's height and width, got input " + tensor::shape_str(input.sizes()));
  }
  Shape out = input.sizes();
  out[out.size() - 2] = h + pad_t + pad_b;
  out[out.size() - 1] = w + pad_l + pad_r;
  if (out[out.size() - 2] < 1 || out[out.size() - 1] < 1 ||
      (mode_ == kernels::PadMode::Replicate && (h < 1 || w < 1))) {
    throw Error(where(method) + "expected an output of at least 1 x 1 from pads (l=" + std::to_string(pad_l) +
                ", r=" + std::to_string(pad_r) + ", t=" + std::to_string(pad_t) + ", b=" + std::to_string(pad_b) +
                "), got input " + tensor::shape_str(input.sizes()) + " and output " + tensor::shape_str(out));
  }
  return out;
}

void SpatialPaddingBase::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  const Shape expected = outputShape(input, method);
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where(method) + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (input " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("undefined")));
  }
  check_matches(where(method), gradOutput, input, "gradOutput", "input");
}

const Tensor& SpatialPaddingBase::updateOutput(const Tensor& input) {
  check_float(where("updateOutput"), input);
  const Shape shape = outputShape(input, "updateOutput");
  ensure(output, shape, input);
  if (output.numel() > 0) kernels::spatial_pad_forward(input, output, mode_, {pad_l, pad_r, pad_t, pad_b}, 0.0);
  return output;
}

const Tensor& SpatialPaddingBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_float(where("updateGradInput"), input);
  checkGradOutput(input, gradOutput, "updateGradInput");
  ensure(gradInput, input.sizes(), input);
  if (gradInput.numel() > 0) kernels::spatial_pad_backward(gradOutput, gradInput, mode_, {pad_l, pad_r, pad_t, pad_b});
  return gradInput;
}

std::string SpatialPaddingBase::str() const {
  return type_name() + "(l=" + std::to_string(pad_l) + ", r=" + std::to_string(pad_r) + ", t=" + std::to_string(pad_t) +
         ", b=" + std::to_string(pad_b) + ")";
}

tensor::Json SpatialPaddingBase::config() const {
  return tensor::Json::Object{{"pad_l", pad_l}, {"pad_r", pad_r}, {"pad_t", pad_t}, {"pad_b", pad_b}};
}

std::array<int64_t, 4> SpatialPaddingBase::readPads(const tensor::Json& config, std::string_view type) {
  ConfigReader c(config, type);
  const int64_t l = c.integer("pad_l");
  const std::array<int64_t, 4> p{l, c.integer("pad_r", l), c.integer("pad_t", l), c.integer("pad_b", l)};
  c.finish();
  return p;
}

}  // namespace nn
