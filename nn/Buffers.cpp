// Buffers.cpp
#include "nn/Buffers.h"

#include "nn/Module.h"

namespace nn {

using tensor::Tensor;

Tensor& ensure(Tensor& buf, const tensor::Shape& shape, const Tensor& like) {
  return ensure(buf, shape, like.dtype(), like.device());
}

Tensor& ensure(Tensor& buf, const tensor::Shape& shape, tensor::DType dtype, tensor::Device device) {
  if (!buf.defined() || buf.dtype() != dtype || buf.device() != device) {
    buf = tensor::empty(shape, dtype, device);
  } else if (buf.sizes() != shape || !buf.is_contiguous()) {
    buf.resize_(shape);
  }
  return buf;
}

Tensor& ensure(Tensor& buf, const tensor::Shape& shape, const Tensor& like, tensor::MemoryFormat format) {
  if (!buf.defined() || buf.dtype() != like.dtype() || buf.device() != like.device()) {
    buf = tensor::empty(shape, like.dtype(), like.device(), format);
  } else if (buf.sizes() != shape || !buf.is_contiguous(format)) {
    buf.resize_(shape, format);
  }
  return buf;
}

void check_float(const std::string& where, const Tensor& t, const char* what) {
  if (!t.defined()) throw tensor::Error(where + what + " is undefined");
  if (t.dtype() != tensor::DType::Float32 && t.dtype() != tensor::DType::Float64) {
    throw tensor::Error(where + "expected float32 or float64 " + what + ", got " + t.description());
  }
}

void check_matches(const std::string& where, const Tensor& t, const Tensor& param, const char* what,
                   const char* param_name) {
  if (t.dtype() != param.dtype() || t.device() != param.device()) {
    throw tensor::Error(where + "expected " + what + " of " + param_name + "'s dtype and device (" +
                        tensor::name(param.dtype()) + " on " + param.device().str() + "), got " +
                        t.description() + " (convert the module with .to(dtype) or the input with .to(...))");
  }
}

namespace {
bool dense_of(const Tensor& t, const tensor::Shape& expected, bool channelsLastToo) {
  return t.defined() && t.sizes() == expected &&
         (t.is_contiguous() || (channelsLastToo && is_channels_last_parameter(t)));
}
}  // namespace

bool is_channels_last_parameter(const Tensor& t) {
  return (t.dim() == 4 || t.dim() == 5) && t.is_contiguous(tensor::MemoryFormat::ChannelsLast);
}

void check_parameter(const Module& m, const char* method, const char* name, const Tensor& value,
                     const tensor::Shape& expected, const Tensor* grad, bool channelsLastToo) {
  auto fail = [&](const std::string& what, const Tensor& t) {
    throw tensor::Error(m.where(method) + "expected " + what + " of " + tensor::shape_str(expected) +
                        (channelsLastToo ? " (contiguous or channels-last), got " : " (contiguous), got ") +
                        (t.defined() ? t.description() + (t.is_contiguous() ? "" : " (not contiguous)")
                                     : std::string("an undefined tensor")) +
                        " (was the field replaced by hand?)");
  };
  if (!dense_of(value, expected, channelsLastToo)) fail(name, value);
  if (!grad) return;
  if (!dense_of(*grad, expected, channelsLastToo)) fail(std::string(name) + "'s gradient", *grad);
  if (grad->dtype() != value.dtype() || grad->device() != value.device()) {
    throw tensor::Error(m.where(method) + "expected " + name + "'s gradient of its dtype and device (" +
                        tensor::name(value.dtype()) + " on " + value.device().str() + "), got " + grad->description() +
                        " (was the field replaced by hand?)");
  }
}

}  // namespace nn
