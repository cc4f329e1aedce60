// Buffers.h: small helpers every module uses for its output/gradient buffers and for the
// argument checks whose messages follow our error style
// ("<type_name>::<method>: expected <contract>, got <actual>").
#pragma once

#include <string>

#include "tensor/Tensor.h"

namespace nn {

class Module;

// Makes `buf` a contiguous tensor of `shape` with `like`'s dtype and device, reusing its
// storage when it can (no allocation in steady state). Returns buf.
tensor::Tensor& ensure(tensor::Tensor& buf, const tensor::Shape& shape, const tensor::Tensor& like);
// The same with `dtype` on `device` (a buffer of another dtype than any tensor at hand).
tensor::Tensor& ensure(tensor::Tensor& buf, const tensor::Shape& shape, tensor::DType dtype, tensor::Device device);
// The same, dense in `format` (Note [Memory formats] in tensor/Tensor.h): the cudnn twins keep
// a channels-last input's layout in their outputs and gradients.
tensor::Tensor& ensure(tensor::Tensor& buf, const tensor::Shape& shape, const tensor::Tensor& like,
                       tensor::MemoryFormat format);

// Throws "<where>expected float32 or float64 <what>, got <description>".
void check_float(const std::string& where, const tensor::Tensor& t, const char* what = "input");
// Throws unless `t` has `param`'s dtype and device (a module's input vs its weight).
void check_matches(const std::string& where, const tensor::Tensor& t, const tensor::Tensor& param,
                   const char* what = "input", const char* param_name = "weight");

// Note [Parameters are checked where they are used]
// Parameter fields are public (Torch's m.weight, optimizers and model files reach them), so a
// user can put any tensor there; the kernels and cuDNN read them as the configuration says.
// Every module with parameters checks them on every pass, on both backends (the twins call the
// nn base's check): a value of the wrong shape, or not dense, would be read past its end, and
// a gradient would be written past it. The checks are a few comparisons per parameter.
//
// Throws "<type>::<method>: expected <name> of [..] (contiguous), got <description>" unless
// `value` is defined, contiguous and of shape `expected`; with `grad`, the same for *grad,
// which must also have value's dtype and device ("<name>'s gradient"). With `channelsLastToo`
// (the convolutions' filters: Module::to(MemoryFormat)) a 4-d or 5-d value or gradient may be
// dense channels-last instead ("(contiguous or channels-last)"); each may have its own layout.
// A 4-d or 5-d tensor laid out dense channels-last (what Module::to(MemoryFormat::ChannelsLast)
// makes of a filter).
bool is_channels_last_parameter(const tensor::Tensor& t);

void check_parameter(const Module& m, const char* method, const char* name, const tensor::Tensor& value,
                     const tensor::Shape& expected, const tensor::Tensor* grad = nullptr, bool channelsLastToo = false);

}  // namespace nn
