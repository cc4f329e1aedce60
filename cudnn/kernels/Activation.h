// Activation.h: the activation gradient cuDNN cannot give an in-place module. cuDNN's
// CLIPPED_RELU backward reads the input x (pass-through where 0 < x <= ceiling); after an
// in-place forward x holds y, where clipped entries equal the ceiling and would pass. This
// kernel computes the gradient from the output alone, as nn::kernels does:
//   dx = dy where 0 < y < ceiling (the ceiling rounded to y's dtype), 0 elsewhere, a NaN y
//   included, as cuDNN's own backward (Note [NaN and Inf] in nn/kernels/Activation.h).
// y, dy, dx: contiguous, one shape and dtype, on one CUDA device; dx may be dy.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void clipped_relu_backward_from_output(const tensor::Tensor& y, const tensor::Tensor& dy, const tensor::Tensor& dx,
                                       double ceiling);

}  // namespace cudnn::kernels
