// TensorChecks.h: the argument checks every cudnn twin and op makes first, with the tensor
// names the backend uses unqualified. Public and CUDA-free (Note [Sealed headers] in
// docs/architecture.md): the twins' templates call these from installed headers.
#pragma once

#include <string>

#include "tensor/Tensor.h"

namespace cudnn {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

// The input is defined and on a CUDA device, and on the device of `state` (a parameter or
// buffer; undefined: no state to match).
void check_on_device(const std::string& where, const Tensor& input, const Tensor& state);
// `t` (called `what`) is defined, on a CUDA device, and float32, float64, float16 or bfloat16.
void check_cuda(const std::string& where, const Tensor& t, const char* what);

}  // namespace cudnn
