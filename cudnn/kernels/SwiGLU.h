// SwiGLU.h: the fused gate of cudnn::SwiGLU, h = silu(a) * b over n contiguous elements, and its
// backward (da, db from dh), each one pass over its operands in acc_t<T> with nn::SwiGLU's
// expressions (nn/kernels/SwiGLU.h: one definition for both backends), rounded once to T. A
// 16-bit forward thus rounds silu(a) * b once, where PyTorch's F.silu(a) * b rounds twice (an ulp
// at most between them). NaN and Inf are nn's.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void swiglu_gate_forward(const tensor::Tensor& a, const tensor::Tensor& b, const tensor::Tensor& h);
void swiglu_gate_backward(const tensor::Tensor& a, const tensor::Tensor& b, const tensor::Tensor& dh,
                          const tensor::Tensor& da, const tensor::Tensor& db);

}  // namespace cudnn::kernels
