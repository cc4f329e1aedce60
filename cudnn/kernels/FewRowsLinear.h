// FewRowsLinear.h: y [rows x N] = x [rows x K] * W [N x K]^T (+ b [N]) for a few rows of float16
// or bfloat16, the product of a Linear whose batch is a decode step's tokens (Note [A few rows'
// product] in FewRowsLinear.cu). Each output is a dot product of x's row with W's row, summed in
// float32 with the bias added before the one rounding to T, as cuBLAS's product with its bias
// epilogue computes it (the order of the additions differs, so results agree to the rounding, not
// to the bit). NaN and Inf follow from IEEE arithmetic in float32, as nn's products.
#pragma once

#include "tensor/Tensor.h"

namespace cudnn::kernels {

// The most rows few_rows_linear takes.
inline constexpr int64_t kFewRowsMax = 4;

// Computes `out` and returns true where it applies: x, weight, bias (when defined) and out
// contiguous float16 or bfloat16 CUDA tensors of one dtype and device, 1 to kFewRowsMax rows, K a
// multiple of 8 and every pointer 16-byte aligned. Returns false, having enqueued nothing,
// otherwise (the caller runs cuBLAS).
bool few_rows_linear(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                     const tensor::Tensor& out);

}  // namespace cudnn::kernels
