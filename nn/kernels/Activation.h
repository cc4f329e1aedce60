// Activation.h: the element-wise activations behind nn::Pointwise, with the meaning of
// cuDNN's activation modes (coef = ClippedReLU's ceiling, ELU's alpha). The backward pass
// reads only the output y (as cuDNN's and Torch's in-place activations do), so a module
// whose input was overwritten in place still has what it needs. Arrays are contiguous;
// y may alias x and dx may alias dy.
#pragma once

#include <cstdint>

namespace nn::kernels {

enum class Activation : uint8_t { ReLU, ClippedReLU, Tanh, Sigmoid, ELU };

template <class T>
void activation_forward(Activation mode, double coef, const T* x, T* y, int64_t n);
template <class T>
void activation_backward(Activation mode, double coef, const T* y, const T* dy, T* dx, int64_t n);

}  // namespace nn::kernels
