// Activation.h: the one enumeration of element-wise activations, shared by the nn modules
// (nn::PointwiseBase::activation()), their CPU kernels (nn/kernels/Activation.h) and the cudnn
// backend (its activation plan and kernels, convolution fusion). Public and CUDA-free: a
// program names an activation the same way whichever backend computes it.
#pragma once

#include <cstdint>

namespace nn {

// GELU is exact (erf); GELUTanh is PyTorch's approximate='tanh'; SiLU is x sigmoid(x);
// ClippedReLU's ceiling, ELU's alpha and LeakyReLU's negative slope are the module's coef().
// Abs, Square, Sqrt, Exp, Log, Power (coef = the exponent), MulConstant and AddConstant (coef =
// the constant) are Torch's element-wise staples; cuDNN has no mode for them (our kernels).
enum class Activation : uint8_t {
  ReLU,
  ClippedReLU,
  Tanh,
  Sigmoid,
  ELU,
  GELU,
  GELUTanh,
  SiLU,
  LeakyReLU,
  Abs,
  Square,
  Sqrt,
  Exp,
  Log,
  Power,
  MulConstant,
  AddConstant,
};

}  // namespace nn
