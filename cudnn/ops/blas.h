// blas.h: cuBLAS matrix products on CUDA tensors, in the row-major convention of
// tensor/Blas.h (cudnn::Linear's three passes). float32 (TF32 when allow_tf32), float64,
// float16 and bfloat16 (accumulated in float32).
#pragma once

#include "tensor/Tensor.h"

namespace cudnn {

// C[M x N] = alpha * op(A) * op(B) + beta * C on contiguous row-major 2-d CUDA tensors;
// op(A) is M x K (A is K x M when transA), op(B) is K x N.
void gemm(bool transA, bool transB, const tensor::Tensor& A, const tensor::Tensor& B, const tensor::Tensor& C,
          double alpha = 1, double beta = 0);

// gemm() on float16 or bfloat16 tensors that also gives rowSums[i] = the sum over k of
// op(A)[i][k] for each of C's M rows (alpha does not scale them), from the same product:
// cuBLASLt's bias-gradient epilogue (Note [A bias gradient in the filter-gradient product] in
// cudnn/ConvolutionBase.cpp). rowSums is made [M] of C's dtype, the sums computed in float32 and
// rounded once to it; split-K parts are summed in float32 only. Returns false, having enqueued
// nothing, where cuBLASLt offers no algorithm for these shapes and pointers, or for any other
// dtype.
bool gemm_with_row_sums(bool transA, bool transB, const tensor::Tensor& A, const tensor::Tensor& B,
                        const tensor::Tensor& C, double alpha, double beta, tensor::Tensor& rowSums);

// C = op(A) * op(B) + bias on float16 or bfloat16 tensors, bias [N] of C's dtype added to every
// row of C in the float32 accumulator before the one rounding: what gemm() with beta 1 over C
// filled with the bias computes, without the pass that fills C and the product's read of it
// (cuBLASLt's bias epilogue, Note [The bias in the product's epilogue] in blas.cpp).
// Returns false, having enqueued nothing, where cuBLASLt offers no algorithm for these shapes and
// pointers, or for any other dtype.
bool gemm_with_bias(bool transA, bool transB, const tensor::Tensor& A, const tensor::Tensor& B,
                    const tensor::Tensor& bias, const tensor::Tensor& C);

// out [rows x N] = x [rows x K] * weight [N x K]^T (+ bias [N] when defined): a Linear's forward,
// a few rows' float16 or bfloat16 product on kernels::few_rows_linear (a decode step's tokens),
// else the bias in the product's epilogue where gemm_with_bias() takes it, else broadcast into
// out and added by gemm() with beta 1. With `addend` ([rows x N], out's dtype and device, not
// overlapping out): out = that + addend, the addend in the few rows' kernel's epilogue, else one
// more pass after the product (Note [Sums in the product's epilogue] in nn/Module.cpp).
void gemm_plus_bias(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                    const tensor::Tensor& out, const tensor::Tensor& addend = tensor::Tensor());

// A Linear's parameter gradients from its input x [rows x K] and output gradient gy [rows x N]:
// gradWeight [N x K] += scale * gy^T x and, where gradBias is defined, gradBias [N] += scale *
// gy's column sums, as a product with a column of ones kept in `ones` (made [rows x 1] of gy's
// dtype and device when it is not). cudnn::Linear, the attention's projections and SwiGLU's.
void linear_grad_parameters(const tensor::Tensor& x, const tensor::Tensor& gy, const tensor::Tensor& gradWeight,
                            const tensor::Tensor& gradBias, double scale, tensor::Tensor& ones);

// One matrix of a batch: a device pointer, its dtype, its row length (leading dimension, in
// elements) and the distance between consecutive matrices of the batch (elements).
struct BatchedMatrix {
  void* data;
  tensor::DType dtype;
  int64_t ld, stride;
};

// C_i[M x N] = alpha * op(A_i) * op(B_i) + beta * C_i for i < batch, row-major as gemm(), on the
// current stream of `device` (cublasGemmStridedBatchedEx). A and B share a dtype; C has it too,
// or is float32 for float16/bfloat16 inputs (the attention fallback's score matrices). float64
// computes in float64, float32 in TF32 when allow_tf32, the rest in float32.
void gemm_strided_batched(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
                          const BatchedMatrix& A, const BatchedMatrix& B, double beta, const BatchedMatrix& C,
                          int64_t batch, int device);

}  // namespace cudnn
