// Reduce.h: the kernels of the reduction twins (cudnn::Sum, Mean, Max, Min: cuDNN's
// cudnnReduceTensor returns no first index on ties, so these are ours) and of cudnn::Normalize.
// A reduction views its contiguous input as [outer x n x inner] and reduces n, as
// nn/kernels/Reduce.h: sums in acc_t<T> (float for float32 and the 16-bit types, double for
// float64); Max and Min keep the first index on ties and the first NaN (Note [NaN and Inf] in
// nn/kernels/Activation.h). One thread per output, or for inner = 1 and a long n one block
// per output folded in a fixed order (tensor/cuda/BlockFold.cuh): the bits do not change
// from run to run. Normalize: one block per row, the formulas of nn/Normalize.h in acc_t<T>.
// Every operand contiguous, on one CUDA device, of x's floating dtype (index: int64).
#pragma once

#include <cstdint>

#include "tensor/Tensor.h"

namespace cudnn::kernels {

void reduce_sum(const tensor::Tensor& x, const tensor::Tensor& y, int64_t outer, int64_t n, int64_t inner, bool mean);
void reduce_sum_backward(const tensor::Tensor& dy, const tensor::Tensor& dx, int64_t outer, int64_t n, int64_t inner,
                         bool mean);
void reduce_extremum(bool max, const tensor::Tensor& x, const tensor::Tensor& y, const tensor::Tensor& index,
                     int64_t outer, int64_t n, int64_t inner);
void reduce_extremum_backward(const tensor::Tensor& dy, const tensor::Tensor& index, const tensor::Tensor& dx,
                              int64_t outer, int64_t n, int64_t inner);

void normalize_forward(const tensor::Tensor& x, const tensor::Tensor& y, int64_t rows, int64_t d, double p, double eps);
void normalize_backward(const tensor::Tensor& x, const tensor::Tensor& dy, const tensor::Tensor& dx, int64_t rows,
                        int64_t d, double p, double eps);

}  // namespace cudnn::kernels
