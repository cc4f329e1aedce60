// FewRowsLinear.h: y [rows x N] = x [rows x K] * W [N x K]^T (+ b [N]) for a few rows of float16
// or bfloat16, the product of a Linear whose batch is a decode step's tokens (Note [A few rows'
// product] in FewRowsLinear.cu). Each output is a dot product of x's row with W's row, summed in
// float32 with the bias added before the one rounding to T, as cuBLAS's product with its bias
// epilogue computes it (the order of the additions differs, so results agree to the rounding, not
// to the bit). An addend (a residual: [rows x N], out's dtype) is added after the bias, before
// that rounding, which spares a residual sum its own pass (Note [Sums in the product's epilogue]
// in nn/Module.cpp). NaN and Inf follow from IEEE arithmetic in float32, as nn's products.
#pragma once

#include "nn/Activation.h"
#include "tensor/Tensor.h"

namespace cudnn::kernels {

// The most rows few_rows_linear takes.
inline constexpr int64_t kFewRowsMax = 4;

// Computes `out` (+ `addend` where defined) and returns true where it applies: x, weight, bias
// and addend (when defined) and out contiguous float16 or bfloat16 CUDA tensors of one dtype
// and device, 1 to kFewRowsMax rows, K a multiple of 8 and every pointer 16-byte aligned.
// Returns false, having enqueued nothing, otherwise (the caller runs cuBLAS).
bool few_rows_linear(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                     const tensor::Tensor& out, const tensor::Tensor& addend = tensor::Tensor());

// out as few_rows_linear (no addend) computes it, and activated = GELU(out) (mode GELU or
// GELUTanh; Note [An activation in the epilogue] in FewRowsLinear.cu), as the activation kernels
// compute it from out: the Linear's and the GELU's outputs in one launch. false, having enqueued
// nothing, for another mode or where few_rows_linear would refuse (activated as out).
bool few_rows_linear_activated(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                               const tensor::Tensor& out, nn::Activation mode, const tensor::Tensor& activated);

// SwiGLU's two projections and its gate in one launch (Note [A gated pair] in FewRowsLinear.cu):
// gate = x gateWeight^T (+ gateBias), up = x upWeight^T (+ upBias), each as few_rows_linear
// computes it, bit for bit, and h = silu(gate) * up as cudnn::kernels::swiglu_gate_forward computes it
// from them; all [rows x N]. The same conditions as few_rows_linear (two weights of one shape,
// both biases or neither); false, having enqueued nothing, otherwise.
bool few_rows_gated(const tensor::Tensor& x, const tensor::Tensor& gateWeight, const tensor::Tensor& gateBias,
                    const tensor::Tensor& upWeight, const tensor::Tensor& upBias, const tensor::Tensor& gate,
                    const tensor::Tensor& up, const tensor::Tensor& h);

}  // namespace cudnn::kernels
