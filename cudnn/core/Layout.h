// Layout.h: the memory format the cudnn twins compute in, and the one conversion of a tensor
// that arrives in another. The twins' contract: a 4-d or 5-d channels-last input (NHWC /
// NDHWC strides, Note [Memory formats] in tensor/Tensor.h) gives channels-last outputs and
// gradInputs; under config().channels_last every 4-d or 5-d input is computed channels-last.
// nn modules are the references and take any strides.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn {

// Note [Channels-last twins]
// cuDNN's NHWC kernels are the fast ones on Tensor Cores (a ResNet-50 3x3 forward: 0.046 ms
// NHWC vs 0.089 ms NCHW on an H100), and a network pays for a layout change at every layer
// that changes it. So the layout travels with the activations, as PyTorch's channels_last
// does: each twin computes in activation_format(input) and allocates output and gradInput in
// it; a gradOutput in another layout is converted once per pass (as_format). Two ways in:
//   - the user hands the network x.contiguous(MemoryFormat::ChannelsLast);
//   - config().channels_last (flag channels_last=true): the first twin that meets a 4-d or
//     5-d row-major input converts it (one copy) and every later layer sees channels-last.
// Convolution weights stay row-major [K x C x kH x kW] parameters; the passes use a
// channels-last copy (Note [Channels-last filters] in cudnn/ops/conv_search.cpp). Batch norm trains
// channels-last data with CUDNN_BATCHNORM_SPATIAL_PERSISTENT through the Ex calls (PyTorch's
// choice; Note [Channels-last batch norm through the Ex calls]), never NCHW data, where that
// mode can overflow. Tensors of other ranks, and float64 tensors, are always computed row-major.
tensor::MemoryFormat activation_format(const tensor::Tensor& input);

// `t` dense in `format`: t itself when it already is, else one copy.
inline tensor::Tensor as_format(const tensor::Tensor& t, tensor::MemoryFormat format) { return t.contiguous(format); }

}  // namespace cudnn
