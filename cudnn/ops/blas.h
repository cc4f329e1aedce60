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

}  // namespace cudnn
